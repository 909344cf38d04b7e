//! Instruction chains: the same operation repeated, each result feeding the
//! next (latency) or eight independent chains side by side (throughput).
//!
//! The optimiser would fold `x + k + k + ...` into one multiply, hoist it
//! out of the loop or vectorise independent chains, so after every
//! operation the value passes through [`Reg::opaque`]: an empty `asm!`
//! block that takes and returns the value in a register. It emits no
//! instruction, so the loop holds exactly one arithmetic instruction per
//! operation (`add`, `imul`, `idiv`, `vfmadd...`), and the compiler can no
//! longer assume anything about the value. (`std::hint::black_box` would do
//! the same but sends the value through the stack, adding a store and a load
//! to every link of a latency chain.)

use std::hint::black_box;

/// Independent chains in a throughput loop: enough to cover latency x
/// issue width of every operation measured here on current cores.
pub const LANES: usize = 8;

/// A value kept in a register, hidden from the optimiser.
pub trait Reg: Copy {
    /// Returns the value unchanged, unknown to the compiler; no instruction.
    fn opaque(self) -> Self;
}

macro_rules! reg_impl {
    ($t:ty, $x86:ident, $x86_tpl:literal, $arm:ident, $arm_tpl:literal) => {
        impl Reg for $t {
            #[inline(always)]
            fn opaque(self) -> Self {
                #[allow(unused_mut)]
                let mut v = self;
                #[cfg(target_arch = "x86_64")]
                // SAFETY: an empty asm block that only names the register.
                unsafe {
                    std::arch::asm!($x86_tpl, inout($x86) v, options(nomem, nostack, preserves_flags));
                }
                #[cfg(target_arch = "aarch64")]
                // SAFETY: an empty asm block that only names the register.
                unsafe {
                    std::arch::asm!($arm_tpl, inout($arm) v, options(nomem, nostack, preserves_flags));
                }
                #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
                {
                    v = black_box(v);
                }
                v
            }
        }
    };
}

// The templates only name the register, in a comment: no instruction.
reg_impl!(i32, reg, "/* {0:e} */", reg, "/* {0:w} */");
reg_impl!(i64, reg, "/* {0} */", reg, "/* {0} */");
reg_impl!(f32, xmm_reg, "/* {0} */", vreg, "/* {0:s} */");
reg_impl!(f64, xmm_reg, "/* {0} */", vreg, "/* {0:d} */");

/// Integer division as the one instruction the CPU has for it.
///
/// Rust's `/` wraps the divide in checks (zero, `MIN / -1`) and, on
/// x86_64, in a test that picks a faster 32-bit divide when both operands
/// fit: all of it would be timed too. The chains only ever divide by a
/// fixed nonzero steady-state value, so the bare instruction is safe here.
pub trait IntDiv: Copy {
    /// `d / x` by the hardware divide instruction (`x` is never zero here).
    fn hw_div(d: Self, x: Self) -> Self;
}

/// `IntDiv` for one integer width; the instructions are given at each use,
/// since they differ per width and asm! templates are literals: x86 sign
/// extends the accumulator into the high register (`$extend`) and divides
/// (`$idiv`); aarch64 divides with `$sdiv` on x or w registers.
macro_rules! int_div_impl {
    ($t:ty, $extend:literal, $idiv:literal, $acc:tt, $high:tt, $sdiv:literal) => {
        impl IntDiv for $t {
            #[inline(always)]
            fn hw_div(d: $t, x: $t) -> $t {
                #[cfg(target_arch = "x86_64")]
                {
                    let q: $t;
                    // SAFETY: x is the chain's nonzero steady-state value and
                    // d / x cannot overflow (d is positive); the high register
                    // is declared clobbered.
                    unsafe {
                        std::arch::asm!(
                            $extend,
                            $idiv,
                            x = in(reg) x,
                            inout($acc) d => q,
                            out($high) _,
                            options(nomem, nostack),
                        );
                    }
                    q
                }
                #[cfg(target_arch = "aarch64")]
                {
                    let q: $t;
                    // SAFETY: sdiv has no side effects (it returns 0 for a zero divisor).
                    unsafe {
                        std::arch::asm!(
                            $sdiv,
                            q = lateout(reg) q,
                            d = in(reg) d,
                            x = in(reg) x,
                            options(pure, nomem, nostack, preserves_flags),
                        );
                    }
                    q
                }
                #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
                {
                    if x == 0 { 0 } else { d.wrapping_div(x) }
                }
            }
        }
    };
}

// cqo/idiv on 64-bit registers, cdq/idiv on 32-bit ones; sdiv on x or w registers.
int_div_impl!(i64, "cqo", "idiv {x}", "rax", "rdx", "sdiv {q}, {d}, {x}");
int_div_impl!(
    i32,
    "cdq",
    "idiv {x:e}",
    "eax",
    "edx",
    "sdiv {q:w}, {d:w}, {x:w}"
);

/// True where [`Reg::opaque`] costs no instruction (x86_64, aarch64).
pub const OPAQUE_IS_FREE: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// Runs `n` operations as one dependent chain from `x`.
#[inline(always)]
pub fn dependent<T: Reg>(mut x: T, n: u64, f: impl Fn(T) -> T) -> T {
    for _ in 0..n / 8 {
        x = f(x).opaque();
        x = f(x).opaque();
        x = f(x).opaque();
        x = f(x).opaque();
        x = f(x).opaque();
        x = f(x).opaque();
        x = f(x).opaque();
        x = f(x).opaque();
    }
    for _ in 0..n % 8 {
        x = f(x).opaque();
    }
    x
}

/// Runs `n` operations spread over [`LANES`] independent chains.
#[inline(always)]
pub fn independent<T: Reg>(x: T, n: u64, f: impl Fn(T) -> T) -> T {
    let (mut a, mut b, mut c, mut d) = (x, x, x, x);
    let (mut e, mut g, mut h, mut i) = (x, x, x, x);
    for _ in 0..n / LANES as u64 {
        a = f(a).opaque();
        b = f(b).opaque();
        c = f(c).opaque();
        d = f(d).opaque();
        e = f(e).opaque();
        g = f(g).opaque();
        h = f(h).opaque();
        i = f(i).opaque();
    }
    for _ in 0..n % LANES as u64 {
        a = f(a).opaque();
    }
    black_box((b, c, d, e, g, h, i));
    a
}

/// The arithmetic operations measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Addition.
    Add,
    /// Multiplication.
    Mul,
    /// Division.
    Div,
    /// Fused multiply-add (for integers: multiply then add, two instructions).
    Fma,
}

impl Op {
    /// Every operation, in report order.
    pub const ALL: [Op; 4] = [Op::Add, Op::Mul, Op::Div, Op::Fma];

    /// The name used in ids.
    pub fn name(self) -> &'static str {
        match self {
            Op::Add => "add",
            Op::Mul => "mul",
            Op::Div => "div",
            Op::Fma => "fma",
        }
    }
}

/// The number types measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// 32-bit signed integer.
    I32,
    /// 64-bit signed integer.
    I64,
    /// 32-bit float.
    F32,
    /// 64-bit float.
    F64,
}

impl Ty {
    /// Every type, in report order.
    pub const ALL: [Ty; 4] = [Ty::I32, Ty::I64, Ty::F32, Ty::F64];

    /// The name used in ids.
    pub fn name(self) -> &'static str {
        match self {
            Ty::I32 => "i32",
            Ty::I64 => "i64",
            Ty::F32 => "f32",
            Ty::F64 => "f64",
        }
    }
}

/// A chain kernel: performs `n` operations and returns a value to keep.
pub type Kernel = fn(u64) -> f64;

/// Why an operation cannot be measured here, if it cannot.
pub fn unavailable(op: Op, ty: Ty) -> Option<String> {
    if op != Op::Fma || matches!(ty, Ty::I32 | Ty::I64) {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if !std::arch::is_x86_feature_detected!("fma") {
            return Some("this CPU has no FMA instructions (x86 FMA3)".into());
        }
        None
    }
    #[cfg(target_arch = "aarch64")]
    {
        None
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        Some(
            "no fused multiply-add is known to be a single instruction on this architecture".into(),
        )
    }
}

// Values that keep every chain in steady state: divisions use D / x with
// D = x0^2 so that x stays x0; fma uses x*0.5 + 0.75, whose fixed point is 1.5;
// additions and multiplications of floats by 1.0 never overflow or denormalise.
const I32_X0: i32 = 46_000;
const I32_D: i32 = I32_X0 * I32_X0;
const I64_X0: i64 = 3_000_000_000;
const I64_D: i64 = I64_X0 * I64_X0;

/// The match from an operation to its integer kernel, whose chains `$chain`
/// runs ([`dependent`] or [`independent`]).
macro_rules! int_ops {
    ($t:ty, $x0:expr, $d:expr, $chain:ident, $op:expr) => {
        match $op {
            Op::Add => |n| {
                let k = (1 as $t).opaque();
                $chain(($x0 as $t).opaque(), n, |x: $t| x.wrapping_add(k)) as f64
            },
            Op::Mul => |n| {
                let k = (3 as $t).opaque();
                $chain(($x0 as $t).opaque(), n, |x: $t| x.wrapping_mul(k)) as f64
            },
            Op::Div => |n| {
                let d = ($d as $t).opaque();
                $chain(($x0 as $t).opaque(), n, |x: $t| <$t>::hw_div(d, x)) as f64
            },
            Op::Fma => |n| {
                let (a, b) = ((3 as $t).opaque(), (1 as $t).opaque());
                $chain(($x0 as $t).opaque(), n, |x: $t| {
                    x.wrapping_mul(a).wrapping_add(b)
                }) as f64
            },
        }
    };
}

macro_rules! int_kernels {
    ($t:ty, $x0:expr, $d:expr, $lat:ident, $thr:ident) => {
        /// Latency kernels for this integer type: add, mul, div, mul+add.
        pub fn $lat(op: Op) -> Kernel {
            int_ops!($t, $x0, $d, dependent, op)
        }

        /// Throughput kernels for this integer type: add, mul, div, mul+add.
        pub fn $thr(op: Op) -> Kernel {
            int_ops!($t, $x0, $d, independent, op)
        }
    };
}

int_kernels!(i32, I32_X0, I32_D, i32_latency, i32_throughput);
int_kernels!(i64, I64_X0, I64_D, i64_latency, i64_throughput);

/// The match from an operation to its float kernel, whose chains `$chain`
/// runs ([`dependent`] or [`independent`]); fma is `$fma`, compiled for FMA.
macro_rules! float_ops {
    ($t:ty, $chain:ident, $fma:ident, $op:expr) => {
        match $op {
            Op::Add => |n| {
                let k = (1.0 as $t).opaque();
                $chain((1.5 as $t).opaque(), n, |x: $t| x + k) as f64
            },
            Op::Mul => |n| {
                let k = (1.0 as $t).opaque();
                $chain((1.5 as $t).opaque(), n, |x: $t| x * k) as f64
            },
            Op::Div => |n| {
                let d = (2.25 as $t).opaque();
                $chain((1.5 as $t).opaque(), n, |x: $t| d / x) as f64
            },
            Op::Fma => |n| {
                // SAFETY: only called where `unavailable` found FMA support.
                unsafe { $fma(n) }
            },
        }
    };
}

macro_rules! float_kernels {
    ($t:ty, $lat:ident, $thr:ident, $fma_lat:ident, $fma_thr:ident) => {
        /// Latency kernels for this float type: add, mul, div, fma.
        pub fn $lat(op: Op) -> Kernel {
            float_ops!($t, dependent, $fma_lat, op)
        }

        /// Throughput kernels for this float type: add, mul, div, fma.
        pub fn $thr(op: Op) -> Kernel {
            float_ops!($t, independent, $fma_thr, op)
        }

        /// A dependent chain of fused multiply-adds.
        #[cfg_attr(target_arch = "x86_64", target_feature(enable = "fma"))]
        unsafe fn $fma_lat(n: u64) -> f64 {
            let (a, b) = ((0.5 as $t).opaque(), (0.75 as $t).opaque());
            dependent((1.5 as $t).opaque(), n, |x: $t| x.mul_add(a, b)) as f64
        }

        /// Independent chains of fused multiply-adds.
        #[cfg_attr(target_arch = "x86_64", target_feature(enable = "fma"))]
        unsafe fn $fma_thr(n: u64) -> f64 {
            let (a, b) = ((0.5 as $t).opaque(), (0.75 as $t).opaque());
            independent((1.5 as $t).opaque(), n, |x: $t| x.mul_add(a, b)) as f64
        }
    };
}

float_kernels!(
    f32,
    f32_latency,
    f32_throughput,
    f32_fma_latency,
    f32_fma_throughput
);
float_kernels!(
    f64,
    f64_latency,
    f64_throughput,
    f64_fma_latency,
    f64_fma_throughput
);

/// The kernel for `op` on `ty`, dependent (`latency`) or independent chains.
pub fn kernel(op: Op, ty: Ty, latency: bool) -> Kernel {
    match (ty, latency) {
        (Ty::I32, true) => i32_latency(op),
        (Ty::I32, false) => i32_throughput(op),
        (Ty::I64, true) => i64_latency(op),
        (Ty::I64, false) => i64_throughput(op),
        (Ty::F32, true) => f32_latency(op),
        (Ty::F32, false) => f32_throughput(op),
        (Ty::F64, true) => f64_latency(op),
        (Ty::F64, false) => f64_throughput(op),
    }
}

/// A dependent chain of single-cycle 64-bit adds: `n` of them take `n` cycles.
#[inline(never)]
pub fn add_chain(n: u64) -> f64 {
    i64_latency(Op::Add)(n)
}

/// Entries in the branch benchmark's data (far more than a predictor can learn).
pub const BRANCH_DATA: usize = 1 << 16;

/// Runs `n` conditional branches on `data[start..]` (wrapping), each taken or
/// not as its byte is zero or not; returns where it stopped and the count.
#[inline(never)]
pub fn branches(data: &[u8; BRANCH_DATA], start: usize, n: u64) -> (usize, u64) {
    let mut acc = 0u64;
    let mut i = start;
    for _ in 0..n {
        let v = data[i % BRANCH_DATA];
        acc = branch_on(v, acc);
        i = i.wrapping_add(1);
    }
    (i % BRANCH_DATA, acc)
}

/// Adds 1 to `acc` when `v` is not zero, through a real conditional jump.
#[inline(always)]
fn branch_on(v: u8, acc: u64) -> u64 {
    #[allow(unused_mut)]
    let mut acc = acc;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: compares a register and jumps over one add; no memory access.
    unsafe {
        std::arch::asm!(
            "test {v}, {v}",
            "jz 2f",
            "add {acc}, 1",
            "2:",
            v = in(reg_byte) v,
            acc = inout(reg) acc,
            options(nomem, nostack),
        );
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: compares a register and jumps over one add; no memory access.
    unsafe {
        std::arch::asm!(
            "cbz {v:w}, 2f",
            "add {acc}, {acc}, #1",
            "2:",
            v = in(reg) v as u32,
            acc = inout(reg) acc,
            options(nomem, nostack),
        );
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        if black_box(v) != 0 {
            acc = black_box(acc + 1);
        }
    }
    acc
}

/// True where [`branches`] is guaranteed a conditional jump (x86_64, aarch64).
pub const BRANCH_IS_ASM: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_keep_their_steady_state_values() {
        assert_eq!(i64_latency(Op::Div)(1000), I64_X0 as f64);
        assert_eq!(i32_latency(Op::Div)(1000), I32_X0 as f64);
        assert_eq!(f64_latency(Op::Div)(1001), 1.5);
        assert_eq!(f32_throughput(Op::Div)(999), 1.5);
        assert_eq!(f64_latency(Op::Mul)(1000), 1.5);
        assert_eq!(i64_latency(Op::Add)(1000), (I64_X0 + 1000) as f64);
        assert_eq!(i64_throughput(Op::Add)(8 * 100 + 3), (I64_X0 + 103) as f64);
        assert_eq!(add_chain(7), (I64_X0 + 7) as f64);
        if unavailable(Op::Fma, Ty::F64).is_none() {
            assert_eq!(f64_latency(Op::Fma)(1000), 1.5);
            assert_eq!(f32_throughput(Op::Fma)(1000), 1.5);
        }
    }

    #[test]
    fn every_kernel_runs_any_count_including_zero() {
        for ty in Ty::ALL {
            for op in Op::ALL {
                if unavailable(op, ty).is_some() {
                    continue;
                }
                for lat in [true, false] {
                    let k = kernel(op, ty, lat);
                    assert!(k(0).is_finite());
                    assert!(k(13).is_finite(), "{op:?} {ty:?}");
                }
            }
        }
    }

    #[test]
    fn branches_count_the_nonzero_bytes_and_wrap() {
        let mut data = Box::new([0u8; BRANCH_DATA]);
        for (i, b) in data.iter_mut().enumerate() {
            *b = (i % 3 == 0) as u8;
        }
        let (at, taken) = branches(&data, 0, 30);
        assert_eq!((at, taken), (30, 10));
        let (at, taken) = branches(&data, BRANCH_DATA - 2, 4);
        assert_eq!(at, 2);
        assert_eq!(
            taken,
            data[BRANCH_DATA - 2] as u64 + data[BRANCH_DATA - 1] as u64 + 1
        );
    }
}
