//! Floats beyond add and multiply: int↔float conversions, a compare and
//! branch on floats beside one on integers, and whether an integer and a
//! float chain run side by side.
//!
//! Conversions are the one instruction each (`asm!`): `cvtsi2sd` and
//! `cvttsd2si` on x86_64, `scvtf` and `fcvtzs` on aarch64. Rust's `as`
//! from float to integer saturates, which adds compares and conditional
//! moves around `cvttsd2si`; the bare instruction is what a C cast or a
//! `to_int_unchecked` costs. Latency is a dependent round trip (integer →
//! float → integer, each result feeding the next); throughput is
//! [`LANES`] independent conversions of one direction per step.
//!
//! The compare-and-branch rows walk a table as `cpu.branch.*` does, each
//! entry compared with a threshold held in a register and a jump over an
//! add: `cmp` + `jle` on `i64`, `ucomisd` + `jbe` on `f64` (`cmp` or
//! `fcmp` and `b.le` on aarch64), on a table that always goes the same
//! way and on one of random bits.
//!
//! The mixed rows time [`LANES`] independent `i64` add chains, as many
//! `f64` add chains, and both in one loop: if the integer units and the
//! floating-point ones work in parallel, both together take as long as the
//! slower alone; if they compete, up to the sum.

use std::hint::black_box;

use super::branch_walk;
use super::chains::{LANES, Reg};
use crate::harness::warnings::Warning;
use crate::harness::{Bench, Ctx, Timed, Unit};
use crate::suites::bench::FnBench;
use crate::suites::undisturbed::Undisturbed;

/// Id of the dependent int → float → int round trip.
pub const CONVERT_ROUNDTRIP: &str = "cpu.convert.roundtrip.latency";
/// Id of independent int → float conversions.
pub const CONVERT_I2F: &str = "cpu.convert.i64_f64.throughput";
/// Id of independent float → int conversions.
pub const CONVERT_F2I: &str = "cpu.convert.f64_i64.throughput";

/// Id of the mixed rows: `i64` adds alone, `f64` adds alone, both.
pub const MIXED_INT: &str = "cpu.mixed.i64";
/// Id of [`LANES`] independent `f64` add chains alone.
pub const MIXED_FLOAT: &str = "cpu.mixed.f64";
/// Id of the integer and the float chains in one loop.
pub const MIXED_BOTH: &str = "cpu.mixed.both";

/// Budget of a row here relative to the profile's default (they are cheap).
const BUDGET: f64 = 0.5;

/// The id of a compare-and-branch row: `cpu.branch.i64.predictable`...
pub fn cmp_branch_id(float: bool, random: bool) -> String {
    format!(
        "cpu.branch.{}.{}",
        if float { "f64" } else { "i64" },
        if random {
            "unpredictable"
        } else {
            "predictable"
        }
    )
}

/// `i` converted to a double, the one instruction; `f` is the register it
/// lands in (x86's `cvtsi2sd` keeps its upper half: a dependency on it).
#[inline(always)]
pub fn i2f(i: i64, f: f64) -> f64 {
    #[allow(unused_mut)]
    let mut f = f;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: converts a register into a register; no memory, no flags.
    unsafe {
        std::arch::asm!("cvtsi2sd {f}, {i}", f = inout(xmm_reg) f, i = in(reg) i,
            options(nomem, nostack, preserves_flags));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: converts a register into a register; no memory, no flags.
    unsafe {
        std::arch::asm!("scvtf {f:d}, {i}", f = inout(vreg) f, i = in(reg) i,
            options(nomem, nostack, preserves_flags));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = f;
        f = black_box(i) as f64;
    }
    f
}

/// `f` truncated to an integer, the one instruction (no saturation: the
/// values here are small whole numbers).
#[inline(always)]
pub fn f2i(f: f64) -> i64 {
    let i: i64;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: converts a register into a register; no memory, no flags.
    unsafe {
        std::arch::asm!("cvttsd2si {i}, {f}", i = lateout(reg) i, f = in(xmm_reg) f,
            options(nomem, nostack, preserves_flags));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: converts a register into a register; no memory, no flags.
    unsafe {
        std::arch::asm!("fcvtzs {i}, {f:d}", i = lateout(reg) i, f = in(vreg) f,
            options(nomem, nostack, preserves_flags));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        i = black_box(f) as i64;
    }
    i
}

/// True where the conversions are the bare instructions (x86_64, aarch64).
pub const CONVERT_IS_ASM: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// The value the conversions go round with.
const CONVERT_X0: i64 = 12_345;

/// `n` dependent round trips, integer → float → integer.
#[inline(never)]
pub fn roundtrip_chain(n: u64) -> f64 {
    let mut x = CONVERT_X0.opaque();
    let mut f = 0.0f64.opaque();
    for _ in 0..n {
        f = i2f(x, f);
        x = f2i(f);
    }
    x as f64
}

/// `n` int → float conversions over [`LANES`] independent registers.
#[inline(never)]
pub fn i2f_lanes(n: u64) -> f64 {
    let x = CONVERT_X0.opaque();
    let mut l = [0.0f64.opaque(); LANES];
    for _ in 0..n / LANES as u64 {
        for v in l.iter_mut() {
            *v = i2f(x, *v);
        }
    }
    for _ in 0..n % LANES as u64 {
        l[0] = i2f(x, l[0]);
    }
    black_box(l);
    l[0]
}

/// `n` float → int conversions over [`LANES`] independent registers.
#[inline(never)]
pub fn f2i_lanes(n: u64) -> f64 {
    let f = (CONVERT_X0 as f64).opaque();
    let mut l = [0i64; LANES];
    for _ in 0..n / LANES as u64 {
        for v in l.iter_mut() {
            *v = f2i(f);
        }
    }
    for _ in 0..n % LANES as u64 {
        l[0] = f2i(f);
    }
    black_box(l);
    l[0] as f64
}

/// [`LANES`] independent `i64` add chains (`INT`), as many `f64` add
/// chains (`FLOAT`), or both in one loop; `n` steps, one add per chain each.
#[inline(never)]
pub fn mixed<const INT: bool, const FLOAT: bool>(n: u64) -> f64 {
    let (ki, kf) = (1i64.opaque(), 1.0f64.opaque());
    let mut a = [0i64.opaque(); LANES];
    let mut b = [1.5f64.opaque(); LANES];
    for _ in 0..n {
        if INT {
            for v in a.iter_mut() {
                *v = v.wrapping_add(ki).opaque();
            }
        }
        if FLOAT {
            for v in b.iter_mut() {
                *v = (*v + kf).opaque();
            }
        }
    }
    black_box((a, b));
    a[0] as f64 + b[0]
}

/// Runs `n` compares of `data[start..]` (wrapping) with a threshold and a
/// jump over an add; returns where it stopped and the adds done.
#[inline(never)]
pub fn cmp_branches<T: CmpBranch>(data: &[T; CMP_DATA], start: usize, n: u64) -> (usize, u64) {
    let t = T::THRESHOLD;
    let mut acc = 0u64;
    let mut i = start % CMP_DATA;
    for _ in 0..n {
        // A power-of-two table: the index wraps by a mask (no compare, no
        // bounds check), as `cpu.branch.*` walks its bytes.
        acc = data[i].branch_above(t, acc);
        i = (i + 1) % CMP_DATA;
    }
    (i, acc)
}

/// A type compared with a threshold by a real conditional jump.
pub trait CmpBranch: Copy {
    /// The threshold: the table holds values below it (0) and above it (2).
    const THRESHOLD: Self;
    /// The value the table holds for a taken (`true`) or skipped add.
    fn entry(above: bool) -> Self;
    /// `acc + 1` when `self` is above `t`, by a compare and a jump.
    fn branch_above(self, t: Self, acc: u64) -> u64;
}

impl CmpBranch for i64 {
    const THRESHOLD: i64 = 1;
    fn entry(above: bool) -> i64 {
        if above { 2 } else { 0 }
    }
    #[inline(always)]
    fn branch_above(self, t: i64, acc: u64) -> u64 {
        #[allow(unused_mut)]
        let mut acc = acc;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: compares two registers and jumps over one add.
        unsafe {
            std::arch::asm!("cmp {v}, {t}", "jle 2f", "add {acc}, 1", "2:",
                v = in(reg) self, t = in(reg) t, acc = inout(reg) acc, options(nomem, nostack));
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: compares two registers and jumps over one add.
        unsafe {
            std::arch::asm!("cmp {v}, {t}", "b.le 2f", "add {acc}, {acc}, #1", "2:",
                v = in(reg) self, t = in(reg) t, acc = inout(reg) acc, options(nomem, nostack));
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        if black_box(self) > t {
            acc = black_box(acc + 1);
        }
        acc
    }
}

impl CmpBranch for f64 {
    const THRESHOLD: f64 = 1.0;
    fn entry(above: bool) -> f64 {
        if above { 2.0 } else { 0.0 }
    }
    #[inline(always)]
    fn branch_above(self, t: f64, acc: u64) -> u64 {
        #[allow(unused_mut)]
        let mut acc = acc;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: compares two registers and jumps over one add.
        unsafe {
            std::arch::asm!("ucomisd {v}, {t}", "jbe 2f", "add {acc}, 1", "2:",
                v = in(xmm_reg) self, t = in(xmm_reg) t, acc = inout(reg) acc,
                options(nomem, nostack));
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: compares two registers and jumps over one add.
        unsafe {
            std::arch::asm!("fcmp {v:d}, {t:d}", "b.le 2f", "add {acc}, {acc}, #1", "2:",
                v = in(vreg) self, t = in(vreg) t, acc = inout(reg) acc, options(nomem, nostack));
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        if black_box(self) > t {
            acc = black_box(acc + 1);
        }
        acc
    }
}

/// Entries of a compare-and-branch table (as `cpu.branch.*`: far more
/// than a predictor can learn).
pub const CMP_DATA: usize = super::chains::BRANCH_DATA;

/// A table of [`CMP_DATA`] entries above the threshold, or random.
pub fn cmp_table<T: CmpBranch>(random: bool) -> Box<[T; CMP_DATA]> {
    let mut rng = fastrand::Rng::with_seed(0xb7a9c4);
    let v: Vec<T> = (0..CMP_DATA)
        .map(|_| T::entry(!random || rng.bool()))
        .collect();
    v.into_boxed_slice()
        .try_into()
        .unwrap_or_else(|_| unreachable!("CMP_DATA entries"))
}

/// A chain-style row: `kernel` timed as the instruction chains are.
fn kernel_bench(
    id: &str,
    summary: &str,
    unit: Unit,
    kernel: super::chains::Kernel,
    interleave: &str,
) -> FnBench {
    FnBench::new(id, summary, unit, move |_ctx: &Ctx| {
        let mut warnings = Vec::new();
        if !CONVERT_IS_ASM {
            warnings.push(Warning::ChainThroughMemory.to_string());
        }
        let chain = super::Chain::new(kernel, warnings);
        Ok(Box::new(Undisturbed::new(chain)) as Box<dyn Timed>)
    })
    .interleave(interleave)
    .budget_scale(BUDGET)
    .on_request()
}

/// The conversion, compare-and-branch and mixed-chain rows.
pub fn benches() -> Vec<Box<dyn Bench>> {
    let mut out = vec![
        kernel_bench(
            CONVERT_ROUNDTRIP,
            "i64 → f64 → i64 (cvtsi2sd + cvttsd2si, scvtf + fcvtzs): time per round trip of one dependent chain",
            Unit::Latency,
            roundtrip_chain,
            "cpu.convert.latency",
        )
        .param("chains", 1)
        .boxed(),
        kernel_bench(
            CONVERT_I2F,
            "i64 → f64 (cvtsi2sd, scvtf): conversions per second over 8 independent registers",
            Unit::Rate,
            i2f_lanes,
            "cpu.convert.throughput",
        )
        .param("chains", LANES)
        .boxed(),
        kernel_bench(
            CONVERT_F2I,
            "f64 → i64 (cvttsd2si, fcvtzs): conversions per second over 8 independent registers",
            Unit::Rate,
            f2i_lanes,
            "cpu.convert.throughput",
        )
        .param("chains", LANES)
        .boxed(),
    ];
    for (id, kernel, summary, int, float) in [
        (
            MIXED_INT,
            mixed::<true, false> as super::chains::Kernel,
            "8 independent i64 add chains: time per step (one add in each)",
            true,
            false,
        ),
        (
            MIXED_FLOAT,
            mixed::<false, true>,
            "8 independent f64 add chains: time per step (one add in each)",
            false,
            true,
        ),
        (
            MIXED_BOTH,
            mixed::<true, true>,
            "the 8 i64 and the 8 f64 add chains in one loop: time per step (one add in each of the 16)",
            true,
            true,
        ),
    ] {
        let chains = LANES * (usize::from(int) + usize::from(float));
        out.push(
            kernel_bench(id, summary, Unit::Latency, kernel, "cpu.mixed")
                .param("i64_chains", if int { LANES } else { 0 })
                .param("f64_chains", if float { LANES } else { 0 })
                .param("chains", chains)
                .boxed(),
        );
    }
    for random in [false, true] {
        for float in [false, true] {
            let summary = format!(
                "a compare of {} with a threshold and a jump over an add, on a table {}",
                if float {
                    "an f64 (ucomisd, fcmp)"
                } else {
                    "an i64 (cmp)"
                },
                if random {
                    "of random values: half of the jumps mispredicted"
                } else {
                    "that always goes the same way: predicted"
                }
            );
            out.push(
                FnBench::new(
                    cmp_branch_id(float, random),
                    summary,
                    Unit::Latency,
                    move |_ctx: &Ctx| {
                        Ok(if float {
                            branch_walk(cmp_table::<f64>(random), cmp_branches, CONVERT_IS_ASM)
                        } else {
                            branch_walk(cmp_table::<i64>(random), cmp_branches, CONVERT_IS_ASM)
                        })
                    },
                )
                .param("type", if float { "f64" } else { "i64" })
                .param("mispredicted", if random { 0.5 } else { 0.0 })
                .interleave(if random {
                    "cpu.branch.cmp.unpredictable"
                } else {
                    "cpu.branch.cmp.predictable"
                })
                .budget_scale(BUDGET)
                .on_request()
                .boxed(),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_keep_their_value_and_run_any_count() {
        assert_eq!(roundtrip_chain(1001), CONVERT_X0 as f64);
        assert_eq!(roundtrip_chain(0), CONVERT_X0 as f64);
        assert_eq!(i2f_lanes(8 * 10 + 3), CONVERT_X0 as f64);
        assert_eq!(f2i_lanes(8 * 10 + 3), CONVERT_X0 as f64);
        assert_eq!(f2i(-3.75), -3);
        assert_eq!(i2f(-7, 0.5), -7.0);
    }

    #[test]
    fn mixed_chains_add_in_every_lane() {
        assert_eq!(mixed::<true, false>(10), 10.0 + 1.5);
        assert_eq!(mixed::<false, true>(10), 0.0 + 11.5);
        assert_eq!(mixed::<true, true>(10), 10.0 + 11.5);
    }

    #[test]
    fn compares_count_the_entries_above_the_threshold_on_both_types() {
        for random in [false, true] {
            let i = cmp_table::<i64>(random);
            let f = cmp_table::<f64>(random);
            let above = i.iter().take(1000).filter(|&&v| v > 1).count() as u64;
            assert_eq!(cmp_branches(&i, 0, 1000), (1000, above));
            assert_eq!(cmp_branches(&f, 0, 1000), (1000, above));
            if !random {
                assert_eq!(above, 1000);
            } else {
                assert!(above > 400 && above < 600, "{above}");
            }
        }
        let i = cmp_table::<i64>(false);
        assert_eq!(cmp_branches(&i, CMP_DATA - 1, 3), (2, 3));
    }

    #[test]
    fn ids_are_unique() {
        let b = benches();
        let ids: std::collections::HashSet<&str> = b.iter().map(|b| b.id()).collect();
        assert_eq!(ids.len(), b.len());
        assert!(ids.contains("cpu.branch.f64.unpredictable"));
        assert!(b.iter().all(|b| b.on_request()));
    }
}
