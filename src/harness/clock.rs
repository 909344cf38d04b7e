//! The CPU clock as a benchmark sees it: estimated once per process from a
//! chain of dependent single-cycle adds, for figures in cycles outside the
//! `cpu` suite (which measures its own chains in every run).
//!
//! Why not the host's nominal clock: boost clocks run well above it, and
//! virtual machines often hide it.

use std::sync::OnceLock;
use std::time::Instant;

/// Runs `n` (rounded up to a multiple of 4) dependent 64-bit adds of 1 to
/// `x`, each waiting for the one before: `n` adds take `n` cycles.
#[inline(never)]
pub fn add_chain(x: u64, n: u64) -> u64 {
    let iters = n.div_ceil(4).max(1);
    #[allow(unused_mut)]
    let mut x = x;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: register arithmetic and a counted loop; no memory access.
    unsafe {
        std::arch::asm!(
            "2:",
            "add {x}, 1",
            "add {x}, 1",
            "add {x}, 1",
            "add {x}, 1",
            "sub {i}, 1",
            "jnz 2b",
            x = inout(reg) x,
            i = inout(reg) iters => _,
            options(nomem, nostack),
        );
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: register arithmetic and a counted loop; no memory access.
    unsafe {
        std::arch::asm!(
            "2:",
            "add {x}, {x}, #1",
            "add {x}, {x}, #1",
            "add {x}, {x}, #1",
            "add {x}, {x}, #1",
            "subs {i}, {i}, #1",
            "b.ne 2b",
            x = inout(reg) x,
            i = inout(reg) iters => _,
            options(nomem, nostack),
        );
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    for _ in 0..iters * 4 {
        x = std::hint::black_box(x + 1);
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
