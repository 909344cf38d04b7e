//! Dispatch: a direct call beside an indirect one, a `match` compiled to
//! a jump table beside a chain of `if`s on the same unpredictable input, a
//! hash-map lookup in a table that fits L1, L2 or only memory, and a panic
//! caught by `catch_unwind` (Rust's throw and catch).
//!
//! The optimiser would see through every one of them, so: the called
//! function is `#[inline(never)]` and the indirect call goes through a
//! pointer it cannot know ([`black_box`]); the arms of the dispatch are
//! opaque `asm!` blocks (one add each, with different constants), so
//! neither form can become a table of values or a conditional move; the
//! `if` chain compares against values hidden from the compiler
//! ([`Reg::opaque`]), or LLVM would turn it into the same jump table as
//! the `match`. The panic is raised by `resume_unwind`, which skips the
//! panic hook (the message a real `panic!` prints): what is left is the
//! unwinder finding the handler and running it, the part C++'s throw and
//! catch also pay.

use std::collections::HashMap;
use std::hint::black_box;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use serde_json::json;

use super::chains::Reg;
use crate::harness::clock::ghz_estimate as clock_ghz_estimate;
use crate::harness::{Bench, Ctx, PrepareError, Profile, Timed, Unit};
use crate::host::Host;
use crate::suites::bench::{FnBench, Looped};
use crate::suites::undisturbed::Undisturbed;
use crate::units::size_label;

/// Id of a direct call of a non-inlined function.
pub const CALL_DIRECT: &str = "cpu.call.direct";
/// Id of the same call through a function pointer.
pub const CALL_INDIRECT: &str = "cpu.call.indirect";
/// Id of the `match` on random input (a jump table).
pub const DISPATCH_MATCH: &str = "cpu.dispatch.match";
/// Id of the `if` chain on the same input.
pub const DISPATCH_IF: &str = "cpu.dispatch.if_chain";
/// Id of a panic raised and caught.
pub const PANIC_CAUGHT: &str = "cpu.panic.caught";

/// Cases of the dispatch (a power of two): enough that a jump table is
/// what LLVM emits.
pub const CASES: u8 = 8;
/// Entries of the dispatch's input (far more than a predictor can learn).
const INPUT: usize = 1 << 16;

/// Hash-map sizes: a label for the id and how its size is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapSize {
    /// A table of a few KiB: L1-resident.
    Small,
    /// About half the L2 cache.
    L2,
    /// Several times the last-level cache: most lookups go to memory.
    Dram,
}

/// Bytes of the small table.
pub const SMALL_MAP: u64 = 4 << 10;
/// The L2 size assumed when sysfs does not give one.
const L2_GUESS: u64 = 512 << 10;
/// The last-level cache assumed when sysfs does not give one.
const LLC_GUESS: u64 = 32 << 20;
/// The DRAM table is this many times the last-level cache...
const DRAM_FACTOR: u64 = 4;
/// ... but never larger (building it is set-up time, every round).
const DRAM_CAP: u64 = 256 << 20;

impl MapSize {
    /// Every size, in report order.
    pub const ALL: [MapSize; 3] = [MapSize::Small, MapSize::L2, MapSize::Dram];

    /// The label used in ids.
    pub fn label(self) -> &'static str {
        match self {
            MapSize::Small => "small",
            MapSize::L2 => "l2",
            MapSize::Dram => "dram",
        }
    }

    /// The table's target size in bytes on `host`.
    pub fn target_bytes(self, host: &Host) -> u64 {
        match self {
            MapSize::Small => SMALL_MAP,
            MapSize::L2 => host.cache(2).map_or(L2_GUESS, |c| c.size_bytes) / 2,
            MapSize::Dram => (host.llc_bytes().unwrap_or(LLC_GUESS) * DRAM_FACTOR).min(DRAM_CAP),
        }
    }
}

/// The id of a lookup in a table of `size`: `cpu.hashmap.get/small`...
pub fn hashmap_id(size: MapSize) -> String {
    format!("cpu.hashmap.get/{}", size.label())
}

/// Bytes of the table std's `HashMap<u64, u64>` allocates for `capacity`
/// buckets: a 16-byte entry and a control byte each.
fn table_bytes(buckets: u64) -> u64 {
    buckets * (std::mem::size_of::<(u64, u64)>() as u64 + 1)
}

/// The most entries whose table stays within `bytes`: std's table has a
/// power-of-two number of buckets, filled to at most 7/8.
pub fn entries_for(bytes: u64) -> u64 {
    let mut buckets = 8u64;
    while table_bytes(buckets * 2) <= bytes {
        buckets *= 2;
    }
    (buckets / 8 * 7).max(1)
}

#[inline(never)]
fn direct_target(x: u64) -> u64 {
    x.wrapping_add(1)
}

/// SplitMix64's finaliser: the key of entry `i` (keys look random, so
/// the table's hash sees no pattern to exploit).
#[inline(always)]
fn key_of(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One arm of the dispatch: adds `$k` to `$acc` in an opaque block, so
/// that the arms stay code the CPU must jump to.
macro_rules! arm {
    ($acc:ident, $k:literal) => {{
        #[cfg(target_arch = "x86_64")]
        // SAFETY: adds an immediate to a register; no memory, no stack.
        unsafe {
            std::arch::asm!(concat!("add {a}, ", $k), a = inout(reg) $acc, options(nomem, nostack));
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: adds an immediate to a register; no memory, no stack.
        unsafe {
            std::arch::asm!(concat!("add {a}, {a}, #", $k), a = inout(reg) $acc, options(nomem, nostack));
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            $acc = black_box($acc + $k);
        }
    }};
}

/// Dispatches `n` values of `data` (from `at`, wrapping) through a `match`.
#[inline(never)]
pub fn by_match(data: &[u8], mut at: usize, n: u64, mut acc: u64) -> (usize, u64) {
    for _ in 0..n {
        // Masked, so LLVM knows the 8 cases cover every value: one jump
        // through the table, without a range check before it.
        match data[at] & (CASES - 1) {
            0 => arm!(acc, 1),
            1 => arm!(acc, 2),
            2 => arm!(acc, 3),
            3 => arm!(acc, 4),
            4 => arm!(acc, 5),
            5 => arm!(acc, 6),
            6 => arm!(acc, 7),
            _ => arm!(acc, 8),
        }
        at = if at + 1 == data.len() { 0 } else { at + 1 };
    }
    (at, acc)
}

/// The same dispatch as an `if` chain, testing the cases in order.
#[inline(never)]
pub fn by_if_chain(data: &[u8], mut at: usize, n: u64, mut acc: u64) -> (usize, u64) {
    // Hidden constants: known to LLVM, the chain would become a `match`.
    let c: [i32; 7] = [
        0i32.opaque(),
        1i32.opaque(),
        2i32.opaque(),
        3i32.opaque(),
        4i32.opaque(),
        5i32.opaque(),
        6i32.opaque(),
    ];
    for _ in 0..n {
        let v = i32::from(data[at]);
        if v == c[0] {
            arm!(acc, 1)
        } else if v == c[1] {
            arm!(acc, 2)
        } else if v == c[2] {
            arm!(acc, 3)
        } else if v == c[3] {
            arm!(acc, 4)
        } else if v == c[4] {
            arm!(acc, 5)
        } else if v == c[5] {
            arm!(acc, 6)
        } else if v == c[6] {
            arm!(acc, 7)
        } else {
            arm!(acc, 8)
        }
        at = if at + 1 == data.len() { 0 } else { at + 1 };
    }
    (at, acc)
}

/// A dispatch kernel: `(data, start, count, acc) -> (stop, acc)`.
type DispatchFn = fn(&[u8], usize, u64, u64) -> (usize, u64);

/// The dispatch benchmark over random cases.
struct Dispatch {
    data: Vec<u8>,
    at: usize,
    acc: u64,
    kernel: DispatchFn,
}

impl Timed for Dispatch {
    fn run(&mut self, ops: u64) -> anyhow::Result<std::time::Duration> {
        let start = std::time::Instant::now();
        let (at, acc) = (self.kernel)(&self.data, self.at, ops, self.acc);
        let took = start.elapsed();
        (self.at, self.acc) = (at, black_box(acc));
        Ok(took)
    }
    fn details(&self) -> Option<serde_json::Value> {
        Some(json!({
            "cases": CASES,
            "ghz_estimate": clock_ghz_estimate(),
        }))
    }
}

/// Random cases, uniformly 0..[`CASES`].
fn random_cases() -> Vec<u8> {
    let mut rng = fastrand::Rng::with_seed(0xd15_9a7c);
    (0..INPUT).map(|_| rng.u8(..CASES)).collect()
}

/// A one-thread closure with the clock estimate, retimed when preempted.
pub(super) fn one_thread(f: impl FnMut() + 'static, details: serde_json::Value) -> Box<dyn Timed> {
    Box::new(Undisturbed::new(Looped::new(f).with_details(details)))
}

/// The details every one-thread row records: the clock estimate.
pub(super) fn ghz_details() -> serde_json::Value {
    json!({ "ghz_estimate": clock_ghz_estimate() })
}

/// Prepares a lookup in a `HashMap<u64, u64>` of `target` bytes.
fn prepare_map(target: u64, ctx: &Ctx) -> Result<Box<dyn Timed>, PrepareError> {
    crate::suites::bench::check_memory(target * 2)?;
    let n = entries_for(target);
    let mut map: HashMap<u64, u64> = HashMap::with_capacity(n as usize);
    for i in 0..n {
        if i % (1 << 20) == 0 && ctx.stopping() {
            return Err(PrepareError::Skip("interrupted while building".into()));
        }
        map.insert(key_of(i), i);
    }
    let details = json!({
        "entries": n,
        "table_bytes": table_bytes(map.capacity().next_power_of_two() as u64),
        "hasher": "std RandomState (SipHash-1-3)",
        "ghz_estimate": clock_ghz_estimate(),
    });
    let mut rng = fastrand::Rng::with_seed(0x4a5b);
    let mut found = 0u64;
    Ok(one_thread(
        move || {
            let k = key_of(rng.u64(..n));
            if let Some(v) = map.get(&black_box(k)) {
                found = black_box(found.wrapping_add(*v));
            }
        },
        details,
    ))
}

/// The dispatch benchmarks on `host`.
pub fn benches(host: &Host) -> Vec<Box<dyn Bench>> {
    let mut out = call_benches();
    out.extend(dispatch_benches());
    out.extend(hashmap_benches(host));
    out.push(panic_bench());
    out
}

/// A direct call and the same call through a function pointer.
fn call_benches() -> Vec<Box<dyn Bench>> {
    vec![
        FnBench::new(
            CALL_DIRECT,
            "a direct call of a non-inlined function (call rel32)",
            Unit::Latency,
            |_ctx: &Ctx| {
                let mut x = 0u64;
                Ok(one_thread(
                    move || x = direct_target(black_box(x)),
                    ghz_details(),
                ))
            },
        )
        .subtract_loop()
        .interleave("cpu.call")
        .on_request().boxed(),
        FnBench::new(
            CALL_INDIRECT,
            "the same call through a function pointer the compiler cannot see (always the same target)",
            Unit::Latency,
            |_ctx: &Ctx| {
                let f: fn(u64) -> u64 = black_box(direct_target);
                let mut x = 0u64;
                Ok(one_thread(move || x = f(black_box(x)), ghz_details()))
            },
        )
        .subtract_loop()
        .interleave("cpu.call")
        .on_request().boxed(),
    ]
}

/// The same random cases dispatched by a match and by an if/else-if chain.
fn dispatch_benches() -> Vec<Box<dyn Bench>> {
    let mut out = Vec::new();
    for (id, kernel, summary) in [
        (
            DISPATCH_MATCH,
            by_match as DispatchFn,
            "a match on 8 random cases (a jump table: one indirect jump, mostly mispredicted)",
        ),
        (
            DISPATCH_IF,
            by_if_chain as DispatchFn,
            "an if/else-if chain on the same 8 random cases (up to 7 conditional branches)",
        ),
    ] {
        out.push(
            FnBench::new(id, summary, Unit::Latency, move |_ctx: &Ctx| {
                Ok(Box::new(Undisturbed::new(Dispatch {
                    data: random_cases(),
                    at: 0,
                    acc: 0,
                    kernel,
                })) as Box<dyn Timed>)
            })
            .param("cases", CASES)
            .interleave("cpu.dispatch")
            .on_request()
            .boxed(),
        );
    }
    out
}

/// A `HashMap` lookup at each table size on `host`.
fn hashmap_benches(host: &Host) -> Vec<Box<dyn Bench>> {
    let mut out = Vec::new();
    for size in MapSize::ALL {
        let bytes = size.target_bytes(host);
        let b = FnBench::new(
            hashmap_id(size),
            format!(
                "HashMap<u64, u64>::get of a random present key, table of about {} (key hashing included)",
                size_label(bytes)
            ),
            Unit::Latency,
            move |ctx: &Ctx| prepare_map(bytes, ctx),
        )
        .param("size", bytes)
        .param("entries", entries_for(bytes));
        // Building a table of several times the LLC is most of a quick round.
        let b = if size == MapSize::Dram {
            b.min_profile(Profile::Default)
        } else {
            b
        };
        out.push(b.on_request().boxed());
    }
    out
}

/// A panic caught one frame up.
fn panic_bench() -> Box<dyn Bench> {
    FnBench::new(
        PANIC_CAUGHT,
        "a panic (resume_unwind: no hook, no message) caught by catch_unwind one frame up",
        Unit::Latency,
        |_ctx: &Ctx| {
            let caught = catch_unwind(|| resume_unwind(Box::new(0u8)));
            if caught.is_ok() {
                return Err(PrepareError::Skip(
                    "panics abort in this build (panic = \"abort\"): nothing unwinds".into(),
                ));
            }
            Ok(one_thread(
                || {
                    let r = catch_unwind(AssertUnwindSafe(|| {
                        if black_box(true) {
                            resume_unwind(Box::new(0u8));
                        }
                    }));
                    black_box(r.is_err());
                },
                ghz_details(),
            ))
        },
    )
    .on_request()
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_dispatches_take_the_same_arms() {
        let data = random_cases();
        let expected: u64 = data[..1000].iter().map(|&v| u64::from(v) + 1).sum();
        assert_eq!(by_match(&data, 0, 1000, 0), (1000, expected));
        assert_eq!(by_if_chain(&data, 0, 1000, 0), (1000, expected));
        // Wraps at the end of the input.
        let (at, _) = by_match(&data, INPUT - 1, 3, 0);
        assert_eq!(at, 2);
        assert!(data.iter().all(|&v| v < CASES));
    }

    #[test]
    fn map_entries_fill_the_table_to_its_size() {
        assert_eq!(entries_for(SMALL_MAP), 112);
        for target in [SMALL_MAP, 256 << 10, 64 << 20] {
            let n = entries_for(target);
            let m: HashMap<u64, u64> = HashMap::with_capacity(n as usize);
            // The table std allocates for n entries is within the target
            // and more than half of it.
            let bytes = table_bytes(m.capacity().next_power_of_two() as u64);
            assert!(bytes <= target && bytes * 2 > target, "{target}: {bytes}");
        }
    }

    #[test]
    fn sizes_follow_the_caches_and_the_dram_table_is_capped() {
        let mut h = Host::default();
        assert_eq!(MapSize::L2.target_bytes(&h), L2_GUESS / 2);
        h.caches.push(crate::host::CacheInfo {
            level: 3,
            kind: "Unified".into(),
            size_bytes: 1 << 30,
            ..Default::default()
        });
        assert_eq!(MapSize::Dram.target_bytes(&h), DRAM_CAP);
    }

    #[test]
    fn a_caught_panic_is_caught_and_benches_are_unique() {
        let b = benches(&Host::default());
        let ids: std::collections::HashSet<&str> = b.iter().map(|b| b.id()).collect();
        assert_eq!(ids.len(), b.len());
        assert!(ids.contains("cpu.hashmap.get/dram") && ids.contains(PANIC_CAUGHT));
        let dram = b.iter().find(|b| b.id() == "cpu.hashmap.get/dram").unwrap();
        assert!(!dram.runs_at(Profile::Quick));
        assert!(catch_unwind(|| resume_unwind(Box::new(0u8))).is_err());
    }
}
