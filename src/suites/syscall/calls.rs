//! E1: a system call next to a function call and a vDSO call.
//!
//! The honest vDSO ratio needs the *same* operation both ways: the libc
//! call, which the vDSO serves without entering the kernel, and the raw
//! system-call instruction, which always enters it. getpid has no vDSO
//! entry (old glibc only cached the PID), so it is compared with a function
//! call instead. Each pair shares an interleave key so that drift of the
//! machine lands on both sides of the ratio.

use std::ffi::{c_int, c_uint, c_void};
use std::hint::black_box;

use libc::c_long;

use super::raw::{self, Vdso, nr};
use crate::harness::warnings::Warning;
use crate::harness::warnings::clocksource_warning;
use crate::harness::{Bench, Ctx, PrepareError, Timed, Unit};
use crate::suites::bench::{FnBench, Looped};
use crate::suites::undisturbed::Undisturbed;

/// Id of the function-call benchmark.
pub const FUNCTION_CALL: &str = "syscall.function_call";
/// Id of getpid through the raw instruction.
pub const GETPID_RAW: &str = "syscall.getpid.raw";
/// Id of getpid through the raw instruction inside a function of its own.
pub const GETPID_RAW_FN: &str = "syscall.getpid.raw_in_fn";
/// Id of getpid through libc.
pub const GETPID_LIBC: &str = "syscall.getpid.libc";
/// Id of getppid through the raw instruction (the call of `perf bench syscall basic`).
pub const GETPPID_RAW: &str = "syscall.getppid.raw";
/// Id of getppid through libc (exactly what `perf bench syscall basic` loops on).
pub const GETPPID_LIBC: &str = "syscall.getppid.libc";

/// The shape of a vDSO operation's call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// clock_gettime(clock, &ts).
    Clock(libc::clockid_t),
    /// gettimeofday(&tv, NULL).
    GetTimeOfDay,
    /// getcpu(&cpu, &node, NULL).
    GetCpu,
    /// time(NULL).
    Time,
}

/// An operation the vDSO serves, measured through it and through the raw system call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VdsoOp {
    /// The id stem: `clock_gettime.monotonic`, `gettimeofday`...
    pub stem: &'static str,
    /// The name in findings: `clock_gettime(MONOTONIC)`.
    pub label: &'static str,
    /// The vDSO function behind it (`clock_gettime`, `getcpu`...).
    func: &'static str,
    kind: Kind,
}

/// Every vDSO operation the suite measures, in run order.
pub const VDSO_OPS: [VdsoOp; 6] = [
    VdsoOp {
        stem: "clock_gettime.monotonic",
        label: "clock_gettime(MONOTONIC)",
        func: "clock_gettime",
        kind: Kind::Clock(libc::CLOCK_MONOTONIC),
    },
    VdsoOp {
        stem: "clock_gettime.realtime",
        label: "clock_gettime(REALTIME)",
        func: "clock_gettime",
        kind: Kind::Clock(libc::CLOCK_REALTIME),
    },
    VdsoOp {
        stem: "clock_gettime.monotonic_coarse",
        label: "clock_gettime(MONOTONIC_COARSE)",
        func: "clock_gettime",
        kind: Kind::Clock(libc::CLOCK_MONOTONIC_COARSE),
    },
    VdsoOp {
        stem: "gettimeofday",
        label: "gettimeofday",
        func: "gettimeofday",
        kind: Kind::GetTimeOfDay,
    },
    VdsoOp {
        stem: "getcpu",
        label: "getcpu",
        func: "getcpu",
        kind: Kind::GetCpu,
    },
    VdsoOp {
        stem: "time",
        label: "time",
        func: "time",
        kind: Kind::Time,
    },
];

impl VdsoOp {
    /// Id of the call through libc and the vDSO.
    pub fn vdso_id(&self) -> String {
        format!("syscall.{}.vdso", self.stem)
    }

    /// Id of the same operation through the raw system-call instruction.
    pub fn raw_id(&self) -> String {
        format!("syscall.{}.raw", self.stem)
    }

    /// The system call number, where opcost knows it on this architecture.
    fn nr(&self) -> Option<c_long> {
        match self.kind {
            Kind::Clock(_) => nr::CLOCK_GETTIME,
            Kind::GetTimeOfDay => nr::GETTIMEOFDAY,
            Kind::GetCpu => nr::GETCPU,
            Kind::Time => nr::TIME,
        }
    }

    /// True when the vDSO reads the clocksource for it, and so falls back to
    /// a system call when it cannot: coarse clocks and time() only read the
    /// time of the last tick, which the vDSO always can.
    fn reads_clock(&self) -> bool {
        match self.kind {
            Kind::Clock(c) => c != libc::CLOCK_MONOTONIC_COARSE && c != libc::CLOCK_REALTIME_COARSE,
            Kind::GetTimeOfDay => true,
            Kind::GetCpu | Kind::Time => false,
        }
    }
}

/// The signature of the vDSO's getcpu.
type GetCpuFn = unsafe extern "C" fn(*mut c_uint, *mut c_uint, *mut c_void) -> c_int;

#[inline(never)]
fn plain_function(x: u64) -> u64 {
    x.wrapping_add(1)
}

/// A [`Looped`] closure with its warnings, retimed when preempted, boxed.
fn looped(f: impl FnMut() + 'static, warnings: Vec<String>) -> Box<dyn Timed> {
    let l = warnings.into_iter().fold(Looped::new(f), Looped::warn);
    Box::new(Undisturbed::new(l))
}

/// The warnings of every raw system-call result (the fallback path, if taken).
fn raw_warnings() -> Vec<String> {
    raw::FALLBACK
        .then(|| Warning::RawViaLibc.to_string())
        .into_iter()
        .collect()
}

/// Checks one call before timing it: a call the kernel refuses (a seccomp
/// filter, an old kernel) skips the benchmark instead of timing an error.
fn probe(ret: isize, what: &str) -> Result<(), PrepareError> {
    raw::check(ret).map(drop).map_err(|e| {
        PrepareError::Skip(format!(
            "{what} fails here ({e}): not supported by this kernel or blocked by a seccomp filter"
        ))
    })
}

/// Checks a libc call that returns 0 or -1 with errno.
fn probe_libc(ret: c_int, what: &str) -> Result<(), PrepareError> {
    let errno = if ret == 0 {
        0
    } else {
        -(std::io::Error::last_os_error().raw_os_error().unwrap_or(1) as isize)
    };
    probe(errno, what)
}

/// Which process id a [`PidCall`] asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pid {
    /// getpid.
    Own,
    /// getppid.
    Parent,
}

/// A call without arguments and without a vDSO entry, measured through the
/// raw instruction and through the C library: the plain cost of entering
/// the kernel.
#[derive(Clone, Copy, Debug)]
struct PidCall {
    which: Pid,
    /// The call's name, for skip reasons.
    name: &'static str,
    /// Its system-call number.
    nr: c_long,
    /// Ids and summaries of the raw and the libc variant.
    raw: (&'static str, &'static str),
    libc: (&'static str, &'static str),
    /// The interleave group of both variants.
    key: &'static str,
}

/// getpid and getppid, in run order (the function call joins getpid's group).
const PID_CALLS: [PidCall; 2] = [
    PidCall {
        which: Pid::Own,
        name: "getpid",
        nr: nr::GETPID,
        raw: (
            GETPID_RAW,
            "getpid through the raw system-call instruction (inline asm, no libc)",
        ),
        libc: (
            GETPID_LIBC,
            "getpid through the C library wrapper (whether libc caches the PID is checked at set-up)",
        ),
        key: "syscall.getpid",
    },
    PidCall {
        which: Pid::Parent,
        name: "getppid",
        nr: nr::GETPPID,
        raw: (
            GETPPID_RAW,
            "getppid through the raw system-call instruction (the call perf bench syscall basic makes)",
        ),
        libc: (
            GETPPID_LIBC,
            "getppid through the C library wrapper, as perf bench syscall basic calls it",
        ),
        key: "syscall.getppid",
    },
];

/// The raw side of a [`PidCall`].
fn prepare_pid_raw(c: PidCall) -> Result<Box<dyn Timed>, PrepareError> {
    let n = c.nr;
    // SAFETY: getpid and getppid take no arguments.
    probe(unsafe { raw::syscall0(n) }, c.name)?;
    Ok(looped(
        move || {
            // SAFETY: as above.
            black_box(unsafe { raw::syscall0(n) });
        },
        raw_warnings(),
    ))
}

/// getpid through the raw instruction in a function that is never inlined:
/// the raw call with a call and a return around it, as a libc wrapper has.
#[inline(never)]
fn getpid_in_fn() -> isize {
    // SAFETY: getpid takes no arguments and touches no memory.
    unsafe { raw::syscall0(nr::GETPID) }
}

/// The raw getpid in a function of its own ([`getpid_in_fn`]).
fn prepare_getpid_in_fn() -> Result<Box<dyn Timed>, PrepareError> {
    probe(getpid_in_fn(), "getpid")?;
    Ok(looped(
        || {
            black_box(getpid_in_fn());
        },
        raw_warnings(),
    ))
}

/// Whether libc's getpid asks the kernel each time, checked: a child made
/// by a raw clone system call (which bypasses libc's fork, so a PID cache
/// would not be reset) compares libc getpid with the raw system call and
/// exits 0 when they agree. Some(true) means libc answered from a cache.
pub fn libc_pid_cache() -> anyhow::Result<bool> {
    use crate::os::child::{Child, SignalsBlocked, Slot};
    let slot = Slot::take()?;
    let blocked = SignalsBlocked::all();
    // SAFETY: clone with only SIGCHLD and no new stack is fork without
    // libc's fork handlers. The child only calls getpid, the raw getpid
    // system call and _exit, none of which takes a lock.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::SIGCHLD as c_long,
            0 as c_long,
            0 as c_long,
            0 as c_long,
            0 as c_long,
        )
    };
    if pid == 0 {
        // SAFETY: in the child, see above.
        unsafe {
            let via_libc = libc::getpid() as c_long;
            let via_kernel = libc::syscall(libc::SYS_getpid);
            libc::_exit(if via_libc == via_kernel { 0 } else { 1 });
        }
    }
    drop(blocked);
    if pid < 0 {
        return Err(anyhow::Error::new(std::io::Error::last_os_error())
            .context("clone system call for the PID cache check"));
    }
    let status = Child::new(pid as libc::pid_t, slot).wait_status()?;
    match (libc::WIFEXITED(status), libc::WEXITSTATUS(status)) {
        (true, 0) => Ok(false),
        (true, 1) => Ok(true),
        _ => anyhow::bail!("the PID cache check's child ended with wait status {status:#x}"),
    }
}

/// The details the libc getpid result carries: the PID cache check, made
/// once per process.
fn pid_cache_details() -> serde_json::Value {
    static CHECKED: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    CHECKED.get_or_init(check_pid_cache).clone()
}

/// Runs the PID cache check and describes its outcome.
fn check_pid_cache() -> serde_json::Value {
    match libc_pid_cache() {
        Ok(cached) => serde_json::json!({
            "pid_cache": cached,
            "pid_cache_check": "a child made by a raw clone system call compared libc getpid with the getpid system call",
        }),
        Err(e) => serde_json::json!({
            "pid_cache": null,
            "pid_cache_check": format!("could not check: {e:#}"),
        }),
    }
}

/// The libc side of a [`PidCall`]: one closure per call, so each loop
/// calls its function directly.
fn prepare_pid_libc(c: PidCall) -> Box<dyn Timed> {
    match c.which {
        Pid::Own => Box::new(Undisturbed::new(
            Looped::new(|| {
                // SAFETY: getpid has no preconditions.
                black_box(unsafe { libc::getpid() });
            })
            .with_details(pid_cache_details()),
        )),
        Pid::Parent => looped(
            || {
                // SAFETY: getppid has no preconditions.
                black_box(unsafe { libc::getppid() });
            },
            Vec::new(),
        ),
    }
}

/// The id of the time-stamp counter read (x86_64 only).
pub const RDTSC: &str = "syscall.rdtsc";
/// The id of the generic timer's counter read (aarch64 only).
pub const CNTVCT: &str = "syscall.cntvct";

/// One `rdtsc`, looped; a skip naming the architecture elsewhere.
fn prepare_rdtsc() -> Result<Box<dyn Timed>, PrepareError> {
    #[cfg(target_arch = "x86_64")]
    {
        Ok(looped(
            || {
                // SAFETY: rdtsc exists on every x86_64 CPU.
                black_box(unsafe { core::arch::x86_64::_rdtsc() });
            },
            Vec::new(),
        ))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Err(PrepareError::Skip(format!(
            "x86_64 instructions (the time-stamp counter); this is {} (syscall.cntvct is its counterpart on aarch64)",
            std::env::consts::ARCH
        )))
    }
}

/// One `mrs cntvct_el0` (no `isb` before it, as `rdtsc` has no fence),
/// looped, with the counter's frequency from `cntfrq_el0` in the details;
/// a skip naming the architecture elsewhere.
fn prepare_cntvct() -> Result<Box<dyn Timed>, PrepareError> {
    #[cfg(target_arch = "aarch64")]
    {
        let hz = cntfrq();
        let details = serde_json::json!({
            "counter": "cntvct_el0",
            "frequency_hz": hz,
            "tick_ns": (hz > 0).then(|| 1e9 / hz as f64),
        });
        Ok(Box::new(Undisturbed::new(
            Looped::new(|| {
                black_box(cntvct());
            })
            .with_details(details),
        )))
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        Err(PrepareError::Skip(format!(
            "aarch64 instructions (the generic timer's cntvct_el0); this is {} (syscall.rdtsc is its counterpart on x86_64)",
            std::env::consts::ARCH
        )))
    }
}

/// The generic timer's virtual count (`mrs cntvct_el0`).
#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn cntvct() -> u64 {
    let t: u64;
    // SAFETY: CNTVCT_EL0 is readable at EL0 under Linux (CNTKCTL_EL1.EL0VCTEN).
    unsafe {
        core::arch::asm!("mrs {t}, cntvct_el0", t = out(reg) t, options(nomem, nostack, preserves_flags))
    };
    t
}

/// The generic timer's frequency in Hz (`mrs cntfrq_el0`).
#[cfg(target_arch = "aarch64")]
fn cntfrq() -> u64 {
    let f: u64;
    // SAFETY: CNTFRQ_EL0 is readable at EL0.
    unsafe {
        core::arch::asm!("mrs {f}, cntfrq_el0", f = out(reg) f, options(nomem, nostack, preserves_flags))
    };
    f
}

/// The E1 benchmarks: function call, rdtsc, cntvct, getpid/getppid, and each vDSO pair.
pub fn benches() -> Vec<Box<dyn Bench>> {
    let mut v: Vec<Box<dyn Bench>> = vec![
        FnBench::new(
            FUNCTION_CALL,
            "a plain non-inlined function call: the unit everything else is measured in",
            Unit::Latency,
            |_| {
                let mut x = 0u64;
                Ok(looped(
                    move || x = black_box(plain_function(black_box(x))),
                    Vec::new(),
                ))
            },
        )
        .subtract_loop()
        .interleave("syscall.getpid")
        .boxed(),
    ];
    for c in PID_CALLS {
        v.push(
            FnBench::new(c.raw.0, c.raw.1, Unit::Latency, move |_| prepare_pid_raw(c))
                .subtract_loop()
                .interleave(c.key)
                .boxed(),
        );
        if c.which == Pid::Own {
            v.push(
                FnBench::new(
                    GETPID_RAW_FN,
                    "getpid through the raw system-call instruction in a function of its own (never inlined): a call and a return around it, as a C library wrapper has",
                    Unit::Latency,
                    |_| prepare_getpid_in_fn(),
                )
                .subtract_loop()
                .interleave(c.key)
                .boxed(),
            );
        }
        v.push(
            FnBench::new(c.libc.0, c.libc.1, Unit::Latency, move |_| {
                Ok(prepare_pid_libc(c))
            })
            .subtract_loop()
            .interleave(c.key)
            .boxed(),
        );
    }
    v.insert(
        1,
        FnBench::new(
            RDTSC,
            "reading the CPU's time-stamp counter (rdtsc), for scale",
            Unit::Latency,
            |_| prepare_rdtsc(),
        )
        .subtract_loop()
        .boxed(),
    );
    v.insert(
        2,
        FnBench::new(
            CNTVCT,
            "reading the generic timer's virtual counter (mrs cntvct_el0), aarch64's rdtsc, for scale",
            Unit::Latency,
            |_| prepare_cntvct(),
        )
        .subtract_loop()
        .boxed(),
    );
    for op in VDSO_OPS {
        let key = format!("syscall.{}", op.stem);
        v.push(
            FnBench::new(
                op.vdso_id(),
                if op.kind == Kind::GetCpu {
                    "getcpu called in the vDSO directly (glibc's sched_getcpu reads rseq instead)"
                        .to_string()
                } else {
                    format!("{} through libc, served by the vDSO", op.label)
                },
                Unit::Latency,
                move |ctx| prepare_vdso(&op, ctx),
            )
            .subtract_loop()
            .interleave(key.clone())
            .boxed(),
        );
        v.push(
            FnBench::new(
                op.raw_id(),
                format!(
                    "{} forced through the raw system-call instruction",
                    op.label
                ),
                Unit::Latency,
                move |_| prepare_raw(&op),
            )
            .subtract_loop()
            .interleave(key)
            .boxed(),
        );
    }
    v
}

/// The libc (vDSO) side of a pair.
fn prepare_vdso(op: &VdsoOp, ctx: &Ctx) -> Result<Box<dyn Timed>, PrepareError> {
    let mut warnings = Vec::new();
    if op.reads_clock()
        && let Some(w) = clocksource_warning(&ctx.host)
    {
        warnings.push(w.to_string());
    }
    let lookup = raw::vdso_lookup(op.func);
    // libc serves time and gettimeofday through the vDSO's clock_gettime
    // where the vDSO lacks them (arm64 has no time, for instance).
    let served = match (lookup, op.kind) {
        (Vdso::Missing, Kind::Time | Kind::GetTimeOfDay) => raw::vdso_lookup("clock_gettime"),
        (l, _) => l,
    };
    if served == Vdso::Missing {
        warnings.push(
            Warning::VdsoMissing {
                func: op.func.to_string(),
            }
            .to_string(),
        );
    }
    Ok(match op.kind {
        Kind::Clock(clock) => {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: ts is a valid timespec.
            probe_libc(unsafe { libc::clock_gettime(clock, &mut ts) }, op.label)?;
            looped(
                move || {
                    // SAFETY: as above.
                    black_box(unsafe { libc::clock_gettime(clock, &mut ts) });
                    black_box(&ts);
                },
                warnings,
            )
        }
        Kind::GetTimeOfDay => {
            let mut tv = libc::timeval {
                tv_sec: 0,
                tv_usec: 0,
            };
            // SAFETY: tv is a valid timeval; the time zone is not asked for.
            let ret = unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) };
            probe_libc(ret, op.label)?;
            looped(
                move || {
                    // SAFETY: as above.
                    black_box(unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) });
                    black_box(&tv);
                },
                warnings,
            )
        }
        Kind::Time => looped(
            || {
                // SAFETY: time accepts a null pointer.
                black_box(unsafe { libc::time(std::ptr::null_mut()) });
            },
            warnings,
        ),
        Kind::GetCpu => {
            // glibc's sched_getcpu reads the rseq area nowadays, so the vDSO
            // function is called directly to measure the vDSO path.
            let Vdso::Found(addr) = lookup else {
                return Err(PrepareError::Skip(no_vdso_getcpu(std::env::consts::ARCH)));
            };
            // SAFETY: the vDSO's getcpu has this C signature on every
            // architecture that exports it.
            let getcpu: GetCpuFn = unsafe { std::mem::transmute::<*mut c_void, GetCpuFn>(addr) };
            let mut cpu_node = [0 as c_uint; 2];
            let [cpu, node] = cpu_node.each_mut().map(|p| p as *mut c_uint);
            // SAFETY: both pointers are valid; the cache argument may be null.
            probe_libc(unsafe { getcpu(cpu, node, std::ptr::null_mut()) }, "getcpu")?;
            looped(
                move || {
                    let [cpu, node] = cpu_node.each_mut().map(|p| p as *mut c_uint);
                    // SAFETY: as above.
                    black_box(unsafe { getcpu(cpu, node, std::ptr::null_mut()) });
                    black_box(&cpu_node);
                },
                warnings,
            )
        }
    })
}

/// Why the vDSO side of getcpu is skipped on `arch`. Neither arm vDSO
/// has getcpu: arm64's exports clock_gettime, gettimeofday and clock_getres
/// (and the signal return), 32-bit arm's the same three and
/// clock_gettime64; there the architecture is the reason, not the kernel.
fn no_vdso_getcpu(arch: &str) -> String {
    let exports = match arch {
        "aarch64" => "the arm64 vDSO has no getcpu (it exports clock_gettime, gettimeofday and clock_getres)",
        "arm" => "the 32-bit arm vDSO has no getcpu (it exports clock_gettime, clock_gettime64, gettimeofday and clock_getres)",
        _ => return "no getcpu in this kernel's vDSO (or the vDSO cannot be inspected from this binary)".to_string(),
    };
    format!("{exports}: getcpu is a system call here, measured as syscall.getcpu.raw")
}

/// Why the raw side of `op` is skipped on `arch`: arm64 has no `time`
/// system call (its table is the generic one, which leaves it out), and
/// 32-bit arm had one only in its old ABI; libc's time() reads the clock
/// through the vDSO's clock_gettime on both.
fn no_raw_call(op: &VdsoOp, arch: &str) -> String {
    match (op.kind, arch) {
        (Kind::Time, "aarch64") => "arm64 has no time system call (the generic system-call table leaves it out): libc's time() reads the clock through the vDSO's clock_gettime".to_string(),
        (Kind::Time, "arm") => "32-bit arm has no time system call in its EABI (only the old ABI had one): libc's time() reads the clock through the vDSO's clock_gettime".to_string(),
        _ => format!(
            "no {} system call known to opcost on this architecture",
            op.func
        ),
    }
}

/// The raw system-call side of a pair.
fn prepare_raw(op: &VdsoOp) -> Result<Box<dyn Timed>, PrepareError> {
    let Some(n) = op.nr() else {
        return Err(PrepareError::Skip(no_raw_call(op, std::env::consts::ARCH)));
    };
    // Each closure owns its output buffer and passes its address, as the
    // libc side does; the kernel writes it on every call.
    match op.kind {
        Kind::Clock(clock) => {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            raw_timed(op, move || {
                // SAFETY: ts is a valid, writable timespec.
                unsafe { raw::syscall3(n, clock as usize, &raw mut ts as usize, 0) }
            })
        }
        Kind::GetTimeOfDay => {
            let mut tv = libc::timeval {
                tv_sec: 0,
                tv_usec: 0,
            };
            raw_timed(op, move || {
                // SAFETY: tv is a valid, writable timeval; no time zone.
                unsafe { raw::syscall3(n, &raw mut tv as usize, 0, 0) }
            })
        }
        Kind::GetCpu => {
            let mut cpu_node = [0 as c_uint; 2];
            raw_timed(op, move || {
                let [cpu, node] = cpu_node.each_mut().map(|p| p as *mut c_uint as usize);
                // SAFETY: both pointers are valid; the cache argument is null.
                unsafe { raw::syscall3(n, cpu, node, 0) }
            })
        }
        Kind::Time => raw_timed(op, move || {
            // SAFETY: time(2) accepts a null pointer.
            unsafe { raw::syscall3(n, 0, 0, 0) }
        }),
    }
}

/// Probes a raw call once, then times it.
fn raw_timed(
    op: &VdsoOp,
    mut call: impl FnMut() -> isize + 'static,
) -> Result<Box<dyn Timed>, PrepareError> {
    probe(call(), op.label)?;
    Ok(looped(
        move || {
            black_box(call());
        },
        raw_warnings(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arm64_skips_name_the_architecture_not_the_kernel() {
        let op = |stem| *VDSO_OPS.iter().find(|o| o.stem == stem).unwrap();
        let time = no_raw_call(&op("time"), "aarch64");
        assert!(time.starts_with("arm64 has no time system call"), "{time}");
        assert!(time.contains("clock_gettime"));
        let getcpu = no_vdso_getcpu("aarch64");
        assert!(
            getcpu.starts_with("the arm64 vDSO has no getcpu"),
            "{getcpu}"
        );
        assert!(getcpu.contains("syscall.getcpu.raw"));
        assert!(no_vdso_getcpu("arm").starts_with("the 32-bit arm vDSO has no getcpu"));
        assert!(no_raw_call(&op("time"), "arm").contains("EABI"));
        // Elsewhere the kernel, not the architecture, is named.
        assert!(no_vdso_getcpu("x86_64").contains("this kernel's vDSO"));
        assert_eq!(
            no_raw_call(&op("time"), "riscv64"),
            "no time system call known to opcost on this architecture"
        );
    }

    #[test]
    fn only_high_resolution_clocks_depend_on_the_clocksource() {
        let depends: Vec<&str> = VDSO_OPS
            .iter()
            .filter(|op| op.reads_clock())
            .map(|op| op.stem)
            .collect();
        assert_eq!(
            depends,
            [
                "clock_gettime.monotonic",
                "clock_gettime.realtime",
                "gettimeofday"
            ]
        );
    }

    #[test]
    fn every_bench_prepares_and_runs_here_or_skips_with_a_reason() {
        // getpid's preparation checks libc's PID cache in a child.
        let _g = crate::os::child::test_lock();
        let ctx = Ctx {
            profile: crate::harness::Profile::Quick,
            host: std::sync::Arc::new(crate::host::Host::default()),
            tmp: std::env::temp_dir(),
            dir: std::env::temp_dir(),
            cpu: None,
            stop: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
            given: Default::default(),
        };
        for b in benches() {
            match b.prepare(&ctx) {
                Ok(mut t) => assert!(t.run(100).is_ok(), "{}", b.id()),
                Err(PrepareError::Skip(reason)) => assert!(!reason.is_empty(), "{}", b.id()),
                Err(e) => panic!("{}: {e}", b.id()),
            }
        }
    }

    #[test]
    fn each_counter_row_runs_on_its_architecture_and_skips_naming_it_elsewhere() {
        let rows = benches();
        let ids: Vec<&str> = rows.iter().map(|b| b.id()).collect();
        assert!(ids.contains(&RDTSC) && ids.contains(&CNTVCT));
        let (mine, other) = match std::env::consts::ARCH {
            "aarch64" => (prepare_cntvct(), prepare_rdtsc()),
            _ => (prepare_rdtsc(), prepare_cntvct()),
        };
        match other {
            Err(PrepareError::Skip(why)) => {
                assert!(why.contains(std::env::consts::ARCH), "{why}")
            }
            _ => panic!("the other architecture's counter did not skip"),
        }
        if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            let mut t = mine.unwrap_or_else(|_| panic!("this architecture's counter skipped"));
            assert!(t.run(100).is_ok());
            #[cfg(target_arch = "aarch64")]
            {
                let d = t.details().unwrap();
                assert_eq!(d["counter"], "cntvct_el0");
                assert!(d["frequency_hz"].as_u64().unwrap() > 0, "{d}");
                let (a, b) = (cntvct(), cntvct());
                assert!(b >= a, "the counter went back: {a} then {b}");
            }
        }
    }
}
