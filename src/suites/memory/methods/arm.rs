//! The aarch64 kernels of the memory methods. Every function needs a
//! 16-byte aligned slice whose length is a multiple of 256 bytes (all but
//! the `mops` ones, which take any length), and the features it is
//! compiled for or that were detected.

use core::arch::asm;

/// HWCAP2_MOPS of the Linux arm64 ABI (asm/hwcap.h), which libc lacks.
const HWCAP2_MOPS: u64 = 1 << 43;

/// Whether the kernel reports FEAT_MOPS (HWCAP2_MOPS).
pub fn has_mops() -> bool {
    // SAFETY: getauxval has no preconditions.
    let hwcap2 = unsafe { libc::getauxval(libc::AT_HWCAP2) };
    hwcap2 & HWCAP2_MOPS != 0
}

/// The block `dc zva` zeroes in bytes, or None where DCZID_EL0.DZP
/// prohibits it.
pub fn dc_zva_block() -> Option<usize> {
    let id: u64;
    // SAFETY: DCZID_EL0 is readable at EL0 on every aarch64 CPU.
    unsafe {
        asm!("mrs {id}, dczid_el0", id = out(reg) id, options(nomem, nostack, preserves_flags))
    };
    if id & 0x10 != 0 {
        return None;
    }
    // BS: log2 of the block size in 4-byte words.
    Some(4 << (id & 0xf))
}

/// SVE's vector length in bytes.
#[target_feature(enable = "sve")]
pub unsafe fn sve_vector_bytes() -> usize {
    let n: usize;
    unsafe { asm!("cntb {n}", n = out(reg) n, options(nomem, nostack, preserves_flags)) };
    n
}

/// Sums 64-bit lanes with `ldp` of q registers, 128 bytes per
/// iteration into four accumulators.
pub unsafe fn read_neon(a: &[u8]) -> u64 {
    if a.len() < 128 {
        return 0;
    }
    let sum: u64;
    unsafe {
        asm!(
            "movi v16.2d, #0",
            "movi v17.2d, #0",
            "movi v18.2d, #0",
            "movi v19.2d, #0",
            "2:",
            "ldp q0, q1, [{p}]",
            "ldp q2, q3, [{p}, #32]",
            "ldp q4, q5, [{p}, #64]",
            "ldp q6, q7, [{p}, #96]",
            "add {p}, {p}, #128",
            "add v16.2d, v16.2d, v0.2d",
            "add v17.2d, v17.2d, v1.2d",
            "add v18.2d, v18.2d, v2.2d",
            "add v19.2d, v19.2d, v3.2d",
            "add v16.2d, v16.2d, v4.2d",
            "add v17.2d, v17.2d, v5.2d",
            "add v18.2d, v18.2d, v6.2d",
            "add v19.2d, v19.2d, v7.2d",
            "cmp {p}, {end}",
            "b.lo 2b",
            "add v16.2d, v16.2d, v17.2d",
            "add v18.2d, v18.2d, v19.2d",
            "add v16.2d, v16.2d, v18.2d",
            "addp d16, v16.2d",
            "fmov {sum}, d16",
            p = inout(reg) a.as_ptr() => _,
            end = in(reg) a.as_ptr().add(a.len() / 128 * 128),
            sum = out(reg) sum,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("v16") _, out("v17") _, out("v18") _, out("v19") _,
            options(readonly, nostack),
        );
    }
    sum
}

/// Stores `v` with `stp` (or non-temporal `stnp`) of q registers, 128
/// bytes per iteration.
pub unsafe fn write_neon(a: &mut [u8], v: u8, nt: bool) {
    if a.len() < 128 {
        return;
    }
    let p = a.as_mut_ptr();
    let end = unsafe { p.add(a.len() / 128 * 128) };
    macro_rules! stores {
        ($st:literal) => {
            unsafe {
                asm!(
                    "dup v0.16b, {v:w}",
                    "mov v1.16b, v0.16b",
                    "2:",
                    concat!($st, " q0, q1, [{p}]"),
                    concat!($st, " q0, q1, [{p}, #32]"),
                    concat!($st, " q0, q1, [{p}, #64]"),
                    concat!($st, " q0, q1, [{p}, #96]"),
                    "add {p}, {p}, #128",
                    "cmp {p}, {end}",
                    "b.lo 2b",
                    v = in(reg) u32::from(v),
                    p = inout(reg) p => _,
                    end = in(reg) end,
                    out("v0") _, out("v1") _,
                    options(nostack),
                )
            }
        };
    }
    if nt {
        stores!("stnp");
    } else {
        stores!("stp");
    }
}

/// Copies with `ldp` loads and `stp` (or non-temporal `stnp`) stores
/// of q registers, 128 bytes per iteration.
pub unsafe fn copy_neon(src: &[u8], dst: &mut [u8], nt: bool) {
    let n = src.len().min(dst.len()) / 128 * 128;
    if n == 0 {
        return;
    }
    let s = src.as_ptr();
    let d = dst.as_mut_ptr();
    let end = unsafe { s.add(n) };
    macro_rules! copies {
        ($st:literal) => {
            unsafe {
                asm!(
                    "2:",
                    "ldp q0, q1, [{s}]",
                    "ldp q2, q3, [{s}, #32]",
                    "ldp q4, q5, [{s}, #64]",
                    "ldp q6, q7, [{s}, #96]",
                    "add {s}, {s}, #128",
                    concat!($st, " q0, q1, [{d}]"),
                    concat!($st, " q2, q3, [{d}, #32]"),
                    concat!($st, " q4, q5, [{d}, #64]"),
                    concat!($st, " q6, q7, [{d}, #96]"),
                    "add {d}, {d}, #128",
                    "cmp {s}, {end}",
                    "b.lo 2b",
                    s = inout(reg) s => _,
                    d = inout(reg) d => _,
                    end = in(reg) end,
                    out("v0") _, out("v1") _, out("v2") _, out("v3") _,
                    out("v4") _, out("v5") _, out("v6") _, out("v7") _,
                    options(nostack),
                )
            }
        };
    }
    if nt {
        copies!("stnp");
    } else {
        copies!("stp");
    }
}

/// Sums 64-bit lanes with `ld1d`, four vectors per iteration, each
/// under a `whilelo` predicate (any vector length).
#[target_feature(enable = "sve")]
pub unsafe fn read_sve(a: &[u8]) -> u64 {
    let sum: u64;
    unsafe {
        asm!(
            "mov {i}, #0",
            "mov z4.d, #0",
            "mov z5.d, #0",
            "mov z6.d, #0",
            "mov z7.d, #0",
            "2:",
            "whilelo p1.d, {i}, {n}",
            "b.none 3f",
            "ld1d {{z0.d}}, p1/z, [{p}, {i}, lsl #3]",
            "incd {i}",
            "whilelo p1.d, {i}, {n}",
            "ld1d {{z1.d}}, p1/z, [{p}, {i}, lsl #3]",
            "incd {i}",
            "whilelo p1.d, {i}, {n}",
            "ld1d {{z2.d}}, p1/z, [{p}, {i}, lsl #3]",
            "incd {i}",
            "whilelo p1.d, {i}, {n}",
            "ld1d {{z3.d}}, p1/z, [{p}, {i}, lsl #3]",
            "incd {i}",
            "add z4.d, z4.d, z0.d",
            "add z5.d, z5.d, z1.d",
            "add z6.d, z6.d, z2.d",
            "add z7.d, z7.d, z3.d",
            "b 2b",
            "3:",
            "add z4.d, z4.d, z5.d",
            "add z6.d, z6.d, z7.d",
            "add z4.d, z4.d, z6.d",
            "ptrue p0.d",
            "uaddv d0, p0, z4.d",
            "fmov {sum}, d0",
            p = in(reg) a.as_ptr(),
            n = in(reg) a.len() / 8,
            i = out(reg) _,
            sum = out(reg) sum,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("p0") _, out("p1") _,
            options(readonly, nostack),
        );
    }
    sum
}

/// Stores `v` with `st1d` (or non-temporal `stnt1d`), four vectors
/// per iteration under `whilelo` predicates.
#[target_feature(enable = "sve")]
pub unsafe fn write_sve(a: &mut [u8], v: u8, nt: bool) {
    macro_rules! stores {
        ($st:literal) => {
            unsafe {
                asm!(
                    "mov z0.b, {v:w}",
                    "mov {i}, #0",
                    "2:",
                    "whilelo p1.d, {i}, {n}",
                    "b.none 3f",
                    concat!($st, " {{z0.d}}, p1, [{p}, {i}, lsl #3]"),
                    "incd {i}",
                    "whilelo p1.d, {i}, {n}",
                    concat!($st, " {{z0.d}}, p1, [{p}, {i}, lsl #3]"),
                    "incd {i}",
                    "whilelo p1.d, {i}, {n}",
                    concat!($st, " {{z0.d}}, p1, [{p}, {i}, lsl #3]"),
                    "incd {i}",
                    "whilelo p1.d, {i}, {n}",
                    concat!($st, " {{z0.d}}, p1, [{p}, {i}, lsl #3]"),
                    "incd {i}",
                    "b 2b",
                    "3:",
                    v = in(reg) u32::from(v),
                    p = in(reg) a.as_mut_ptr(),
                    n = in(reg) a.len() / 8,
                    i = out(reg) _,
                    out("v0") _, out("p1") _,
                    options(nostack),
                )
            }
        };
    }
    if nt {
        stores!("stnt1d");
    } else {
        stores!("st1d");
    }
}

/// Copies with `ld1d` loads and `st1d` (or non-temporal `stnt1d`)
/// stores, four vectors per iteration under `whilelo` predicates.
#[target_feature(enable = "sve")]
pub unsafe fn copy_sve(src: &[u8], dst: &mut [u8], nt: bool) {
    let n = src.len().min(dst.len()) / 8;
    macro_rules! copies {
        ($st:literal) => {
            unsafe {
                asm!(
                    "mov {i}, #0",
                    "2:",
                    "whilelo p0.d, {i}, {n}",
                    "b.none 3f",
                    "ld1d {{z0.d}}, p0/z, [{s}, {i}, lsl #3]",
                    concat!($st, " {{z0.d}}, p0, [{d}, {i}, lsl #3]"),
                    "incd {i}",
                    "whilelo p1.d, {i}, {n}",
                    "ld1d {{z1.d}}, p1/z, [{s}, {i}, lsl #3]",
                    concat!($st, " {{z1.d}}, p1, [{d}, {i}, lsl #3]"),
                    "incd {i}",
                    "whilelo p2.d, {i}, {n}",
                    "ld1d {{z2.d}}, p2/z, [{s}, {i}, lsl #3]",
                    concat!($st, " {{z2.d}}, p2, [{d}, {i}, lsl #3]"),
                    "incd {i}",
                    "whilelo p3.d, {i}, {n}",
                    "ld1d {{z3.d}}, p3/z, [{s}, {i}, lsl #3]",
                    concat!($st, " {{z3.d}}, p3, [{d}, {i}, lsl #3]"),
                    "incd {i}",
                    "b 2b",
                    "3:",
                    s = in(reg) src.as_ptr(),
                    d = in(reg) dst.as_mut_ptr(),
                    n = in(reg) n,
                    i = out(reg) _,
                    out("v0") _, out("v1") _, out("v2") _, out("v3") _,
                    out("p0") _, out("p1") _, out("p2") _, out("p3") _,
                    options(nostack),
                )
            }
        };
    }
    if nt {
        copies!("stnt1d");
    } else {
        copies!("st1d");
    }
}

/// Zeroes `a` with `dc zva`, one DCZID_EL0 block per instruction (the
/// unaligned head and tail, if any, with ordinary stores).
pub unsafe fn dc_zva(a: &mut [u8]) {
    let Some(bs) = dc_zva_block() else {
        a.fill(0);
        return;
    };
    let head = a.as_ptr().align_offset(bs).min(a.len());
    let body = (a.len() - head) / bs * bs;
    let (h, rest) = a.split_at_mut(head);
    let (b, t) = rest.split_at_mut(body);
    h.fill(0);
    t.fill(0);
    if body == 0 {
        return;
    }
    let p = b.as_mut_ptr();
    unsafe {
        asm!(
            "2:",
            "dc zva, {p}",
            "add {p}, {p}, {bs}",
            "cmp {p}, {end}",
            "b.lo 2b",
            p = inout(reg) p => _,
            end = in(reg) p.add(body),
            bs = in(reg) bs,
            options(nostack),
        );
    }
}

/// Fills `a` with `v` by FEAT_MOPS `setp`/`setm`/`sete`.
pub unsafe fn set_mops(a: &mut [u8], v: u8) {
    unsafe {
        asm!(
            ".arch_extension mops",
            "setp [{d}]!, {n}!, {v}",
            "setm [{d}]!, {n}!, {v}",
            "sete [{d}]!, {n}!, {v}",
            d = inout(reg) a.as_mut_ptr() => _,
            n = inout(reg) a.len() => _,
            v = in(reg) u64::from(v),
            options(nostack),
        );
    }
}

/// Copies `src` into `dst` by FEAT_MOPS `cpyp`/`cpym`/`cpye`.
pub unsafe fn copy_mops(src: &[u8], dst: &mut [u8]) {
    unsafe {
        asm!(
            ".arch_extension mops",
            "cpyp [{d}]!, [{s}]!, {n}!",
            "cpym [{d}]!, [{s}]!, {n}!",
            "cpye [{d}]!, [{s}]!, {n}!",
            d = inout(reg) dst.as_mut_ptr() => _,
            s = inout(reg) src.as_ptr() => _,
            n = inout(reg) src.len().min(dst.len()) => _,
            options(nostack),
        );
    }
}
