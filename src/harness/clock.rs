//! The CPU clock as a benchmark sees it: estimated once per process from a
//! chain of dependent single-cycle adds, for figures in cycles outside the
//! `cpu` suite (which measures its own chains in every run).
//!
//! Why not the host's nominal clock: boost clocks run well above it, and
//! virtual machines often hide it.

use std::sync::OnceLock;
use std::time::Instant;

/// Runs `n` (rounded up to a multiple of 4) dependent 64-bit adds of 1 to
/// `x`, each waiting for the one before: `n` adds take `n` cycles. The 1
/// is in a register, not an immediate: recent Intel cores (Golden Cove and
/// later) fold an add of a small immediate into the renamer, and a chain
/// of them ran at three to four a cycle there (a "14.7 GHz" clock on a
/// Xeon guest of this project).
#[inline(never)]
pub fn add_chain(x: u64, n: u64) -> u64 {
    let iters = n.div_ceil(4).max(1);
    #[allow(unused_mut)]
    let mut x = x;
    #[allow(unused_variables)]
    let one = std::hint::black_box(1u64);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: register arithmetic and a counted loop; no memory access.
    unsafe {
        std::arch::asm!(
            "2:",
            "add {x}, {one}",
            "add {x}, {one}",
            "add {x}, {one}",
            "add {x}, {one}",
            "sub {i}, 1",
            "jnz 2b",
            x = inout(reg) x,
            i = inout(reg) iters => _,
            one = in(reg) one,
            options(nomem, nostack),
        );
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: register arithmetic and a counted loop; no memory access.
    unsafe {
        std::arch::asm!(
            "2:",
            "add {x}, {x}, {one}",
            "add {x}, {x}, {one}",
            "add {x}, {x}, {one}",
            "add {x}, {x}, {one}",
            "subs {i}, {i}, #1",
            "b.ne 2b",
            x = inout(reg) x,
            i = inout(reg) iters => _,
            one = in(reg) one,
            options(nomem, nostack),
        );
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    for _ in 0..iters * 4 {
        x = std::hint::black_box(x + one);
    }
    x
}

/// The clock in GHz estimated once per process (best of five chains of
/// 1 M adds); `None` when the timer cannot resolve them.
pub fn ghz_estimate() -> Option<f64> {
    static EST: OnceLock<Option<f64>> = OnceLock::new();
    *EST.get_or_init(|| {
        const N: u64 = 1_000_000;
        (0..5)
            .map(|k| {
                let start = Instant::now();
                std::hint::black_box(add_chain(std::hint::black_box(k), N));
                start.elapsed()
            })
            .min()
            .filter(|d| !d.is_zero())
            .map(|d| N as f64 / d.as_nanos() as f64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_adds_what_it_says() {
        assert_eq!(add_chain(5, 8), 13);
        assert_eq!(add_chain(0, 7), 8); // rounded up to a multiple of 4
    }

    #[test]
    fn the_estimate_is_a_plausible_clock() {
        let g = ghz_estimate().expect("the timer resolves 1 M adds");
        assert!((0.1..10.0).contains(&g), "{g} GHz");
    }
}
