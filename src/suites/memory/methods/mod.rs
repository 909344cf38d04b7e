//! Memory bandwidth by every method the CPU offers, each a result of its
//! own (`memory.bandwidth.copy.avx2_nt/threads=1`), so that the fastest
//! names the machine's bandwidth and the others say what a program gets
//! with each way of moving memory.
//!
//! - `glibc_above_threshold` / `glibc_below_threshold`: libc `memcpy` or
//!   `memset` called on blocks above and below glibc's non-temporal
//!   threshold (`glibc.cpu.x86_non_temporal_threshold`, read from
//!   `ld.so --list-tunables`). Above it glibc streams past the cache; below
//!   it a store that misses first reads the line (read-for-ownership).
//! - `rep_movsb` / `rep_stosb`: the string instructions (fast with ERMS).
//! - `sse2`, `avx2`, `avx512`: aligned vector loads and stores, 16, 32 and
//!   64 bytes at a time, four independent streams per loop iteration.
//! - `sse2_nt`, `avx2_nt`, `avx512_nt`: the same with non-temporal stores
//!   (`movntdq`, `vmovntdq`), an `sfence` at the end of every block.
//! - aarch64's own: `neon` (`ldp`/`stp` of 16-byte q registers, 128 bytes
//!   per loop iteration, four accumulators when reading), `neon_nt` (the
//!   stores as `stnp`, non-temporal pairs), `sve` and `sve_nt` (`ld1d` /
//!   `st1d` / `stnt1d` at the CPU's vector length, four vectors per
//!   iteration under `whilelo` predicates), `dc_zva` (write only: `dc zva`
//!   zeroes one block of DCZID_EL0's size per instruction; the bytes
//!   written are zeros) and `mops` (FEAT_MOPS: `setp/setm/sete` and
//!   `cpyp/cpym/cpye`, the ISA's memset and memmove).
//!
//! Features are detected at run time (SVE from HWCAP, FEAT_MOPS from
//! HWCAP2, `dc zva` from DCZID_EL0): a method the CPU lacks is a skip with
//! the reason, never an illegal instruction; each architecture's methods
//! skip on the other, naming it, and the libc methods run everywhere. One operation is one block; the arrays are many
//! blocks long and at least 256 MiB (4x the last-level cache if larger, up
//! to the profile's cap; 128 MiB at quick), or one block larger than that, so
//! every block comes from memory.

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::warnings::Warning;

use super::region::{Pages, Region};
use super::{LLC_FACTOR, size_label};
use crate::harness::{Bench, Ctx, PrepareError, Profile, Timed, Unit};
use crate::suites::bench::FnBench;

/// Bytes per operation of the methods that loop themselves (and of libc
/// below its threshold, at most).
pub const BLOCK: usize = 32 << 20;
/// Smallest array of a method: as large as `perf bench mem memcpy -s 256MB`.
pub const MIN_ARRAY: usize = 256 << 20;
/// Array of a method at the quick profile: 4x a 32 MiB LLC, half the
/// default, since mapping and filling the arrays is most of a quick round.
pub const QUICK_ARRAY: usize = 128 << 20;
/// The block size glibc is called with above its threshold when the
/// threshold is not known.
const UNKNOWN_ABOVE: usize = 256 << 20;
/// The block size glibc is called with below its threshold when the
/// threshold is not known (below every default threshold).
const UNKNOWN_BELOW: usize = 1 << 20;
/// Budget of one method relative to the profile's default: every block is
/// tens of milliseconds and the arrays take a while to fill.
const METHOD_BUDGET: f64 = 1.5;
/// Alignment of every block (a page).
const ALIGN: usize = 4096;

/// What moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Load every byte of one array.
    Read,
    /// Store to every byte of one array.
    Write,
    /// Copy one array to another.
    Copy,
}

impl Op {
    /// The kernel name in ids (`memory.bandwidth.NAME.METHOD`).
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Copy => "copy",
        }
    }

    /// Arrays the operation works on.
    fn arrays(self) -> usize {
        if self == Op::Copy { 2 } else { 1 }
    }

    /// The byte accounting (as in [`super::bandwidth::Kernel::accounting`]).
    pub fn accounting(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "written",
            Op::Copy => "copied",
        }
    }

    /// The methods measured for this operation.
    pub fn methods(self) -> &'static [Method] {
        match self {
            Op::Read => &[
                Method::Sse2,
                Method::Avx2,
                Method::Avx512,
                Method::Neon,
                Method::Sve,
            ],
            Op::Write => &[
                Method::GlibcAbove,
                Method::GlibcBelow,
                Method::RepString,
                Method::Sse2Nt,
                Method::Avx2,
                Method::Avx2Nt,
                Method::Avx512,
                Method::Avx512Nt,
                Method::Neon,
                Method::NeonNt,
                Method::Sve,
                Method::SveNt,
                Method::DcZva,
                Method::Mops,
            ],
            Op::Copy => &[
                Method::GlibcAbove,
                Method::GlibcBelow,
                Method::RepString,
                Method::Sse2Nt,
                Method::Avx2,
                Method::Avx2Nt,
                Method::Avx512,
                Method::Avx512Nt,
                Method::Neon,
                Method::NeonNt,
                Method::Sve,
                Method::SveNt,
                Method::Mops,
            ],
        }
    }
}

/// How bytes are moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// libc memcpy/memset on blocks above glibc's non-temporal threshold.
    GlibcAbove,
    /// libc memcpy/memset on blocks below glibc's non-temporal threshold.
    GlibcBelow,
    /// `rep movsb` / `rep stosb`.
    RepString,
    /// 16-byte SSE2 loads and stores.
    Sse2,
    /// 16-byte loads, non-temporal 16-byte stores.
    Sse2Nt,
    /// 32-byte AVX2 loads and stores.
    Avx2,
    /// 32-byte loads, non-temporal 32-byte stores.
    Avx2Nt,
    /// 64-byte AVX-512 loads and stores.
    Avx512,
    /// 64-byte loads, non-temporal 64-byte stores.
    Avx512Nt,
    /// aarch64 NEON: `ldp`/`stp` of 16-byte q registers.
    Neon,
    /// aarch64 NEON loads, non-temporal `stnp` stores.
    NeonNt,
    /// aarch64 SVE: `ld1d`/`st1d` at the CPU's vector length.
    Sve,
    /// aarch64 SVE loads, non-temporal `stnt1d` stores.
    SveNt,
    /// aarch64 `dc zva`: zeroes one DCZID_EL0 block per instruction (write only).
    DcZva,
    /// aarch64 FEAT_MOPS: `setp/setm/sete`, `cpyp/cpym/cpye`.
    Mops,
}

impl Method {
    /// The method's name in ids.
    pub fn name(self, op: Op) -> &'static str {
        match (self, op) {
            (Method::GlibcAbove, _) => "glibc_above_threshold",
            (Method::GlibcBelow, _) => "glibc_below_threshold",
            (Method::RepString, Op::Copy) => "rep_movsb",
            (Method::RepString, _) => "rep_stosb",
            (Method::Sse2, _) => "sse2",
            (Method::Sse2Nt, _) => "sse2_nt",
            (Method::Avx2, _) => "avx2",
            (Method::Avx2Nt, _) => "avx2_nt",
            (Method::Avx512, _) => "avx512",
            (Method::Avx512Nt, _) => "avx512_nt",
            (Method::Neon, _) => "neon",
            (Method::NeonNt, _) => "neon_nt",
            (Method::Sve, _) => "sve",
            (Method::SveNt, _) => "sve_nt",
            (Method::DcZva, _) => "dc_zva",
            (Method::Mops, _) => "mops",
        }
    }

    /// One line for `opcost list`.
    fn summary(self, op: Op) -> String {
        let f = if op == Op::Copy { "memcpy" } else { "memset" };
        let what = match self {
            Method::GlibcAbove => {
                format!("libc {f} on blocks above glibc's non-temporal threshold")
            }
            Method::GlibcBelow => {
                format!("libc {f} on blocks below glibc's non-temporal threshold")
            }
            Method::RepString if op == Op::Copy => "rep movsb".to_string(),
            Method::RepString => "rep stosb".to_string(),
            Method::Sse2 => "16-byte SSE2 aligned loads/stores".to_string(),
            Method::Sse2Nt => "16-byte non-temporal stores (movntdq) + sfence".to_string(),
            Method::Avx2 => "32-byte AVX2 aligned loads/stores".to_string(),
            Method::Avx2Nt => "32-byte non-temporal stores (vmovntdq) + sfence".to_string(),
            Method::Avx512 => "64-byte AVX-512 aligned loads/stores".to_string(),
            Method::Avx512Nt => "64-byte non-temporal stores (vmovntdq zmm) + sfence".to_string(),
            Method::Neon => "aarch64 NEON ldp/stp of 16-byte q registers".to_string(),
            Method::NeonNt => "aarch64 NEON ldp loads, non-temporal stnp stores".to_string(),
            Method::Sve => "aarch64 SVE ld1d/st1d at the CPU's vector length".to_string(),
            Method::SveNt => "aarch64 SVE ld1d loads, non-temporal stnt1d stores".to_string(),
            Method::DcZva => {
                "aarch64 dc zva (zeroing a cache-line block per instruction)".to_string()
            }
            Method::Mops if op == Op::Copy => "aarch64 FEAT_MOPS cpyp/cpym/cpye".to_string(),
            Method::Mops => "aarch64 FEAT_MOPS setp/setm/sete".to_string(),
        };
        format!(
            "{} bandwidth from memory by {what}, one thread (bytes {})",
            op.name(),
            op.accounting()
        )
    }

    /// Why this method cannot run here, if it cannot.
    pub fn unavailable(self) -> Option<String> {
        let feature = match self {
            Method::GlibcAbove | Method::GlibcBelow => return None,
            Method::RepString | Method::Sse2 | Method::Sse2Nt => None,
            Method::Avx2 | Method::Avx2Nt => Some("avx2"),
            Method::Avx512 | Method::Avx512Nt => Some("avx512f"),
            Method::Neon | Method::NeonNt => return arm_missing(ArmFeature::Neon),
            Method::Sve | Method::SveNt => return arm_missing(ArmFeature::Sve),
            Method::DcZva => return arm_missing(ArmFeature::DcZva),
            Method::Mops => return arm_missing(ArmFeature::Mops),
        };
        x86_missing(feature)
    }

    /// Whether this is one of aarch64's methods.
    pub fn is_arm(self) -> bool {
        matches!(
            self,
            Method::Neon
                | Method::NeonNt
                | Method::Sve
                | Method::SveNt
                | Method::DcZva
                | Method::Mops
        )
    }

    /// Bytes per operation (one block), given glibc's threshold.
    pub fn block(self, threshold: Option<usize>) -> usize {
        match (self, threshold) {
            (Method::GlibcAbove, Some(t)) => (t / BLOCK + 1) * BLOCK,
            (Method::GlibcAbove, None) => UNKNOWN_ABOVE,
            (Method::GlibcBelow, Some(t)) => (t / 2 / ALIGN * ALIGN).clamp(ALIGN, BLOCK),
            (Method::GlibcBelow, None) => UNKNOWN_BELOW,
            _ => BLOCK,
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn x86_missing(feature: Option<&str>) -> Option<String> {
    let have = match feature {
        None => true,
        Some("avx2") => std::arch::is_x86_feature_detected!("avx2"),
        Some(_) => std::arch::is_x86_feature_detected!("avx512f"),
    };
    (!have).then(|| {
        format!(
            "this CPU lacks {} (not in its CPUID flags)",
            feature.unwrap_or("")
        )
    })
}

#[cfg(not(target_arch = "x86_64"))]
fn x86_missing(_feature: Option<&str>) -> Option<String> {
    Some(format!(
        "x86_64 instructions; this is {}",
        std::env::consts::ARCH
    ))
}

/// What an aarch64 method needs of the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ArmFeature {
    /// Advanced SIMD, part of every aarch64 CPU Linux runs on.
    Neon,
    /// The Scalable Vector Extension (HWCAP_SVE).
    Sve,
    /// `dc zva` allowed at EL0 (DCZID_EL0.DZP clear).
    DcZva,
    /// FEAT_MOPS, the memory copy and set instructions (HWCAP2_MOPS).
    Mops,
}

#[cfg(target_arch = "aarch64")]
fn arm_missing(feature: ArmFeature) -> Option<String> {
    match feature {
        ArmFeature::Neon => None,
        ArmFeature::Sve => (!std::arch::is_aarch64_feature_detected!("sve"))
            .then(|| "this CPU lacks SVE (not in its HWCAP)".to_string()),
        ArmFeature::DcZva => match arm::dc_zva_block() {
            Some(_) => None,
            None => Some("dc zva is prohibited at EL0 here (DCZID_EL0.DZP is set)".to_string()),
        },
        ArmFeature::Mops => (!arm::has_mops()).then(|| {
            "this CPU lacks FEAT_MOPS, the memory copy and set instructions (not in its HWCAP2)"
                .to_string()
        }),
    }
}

#[cfg(not(target_arch = "aarch64"))]
fn arm_missing(_feature: ArmFeature) -> Option<String> {
    Some(format!(
        "aarch64 instructions; this is {}",
        std::env::consts::ARCH
    ))
}

/// glibc's string-function thresholds, as its dynamic loader lists them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tunables {
    /// `glibc.cpu.x86_non_temporal_threshold`, bytes.
    pub non_temporal: Option<usize>,
    /// `glibc.cpu.x86_rep_movsb_threshold`, bytes.
    pub rep_movsb: Option<usize>,
    /// `glibc.cpu.x86_rep_stosb_threshold`, bytes.
    pub rep_stosb: Option<usize>,
}

/// Parses the output of `ld.so --list-tunables`.
pub fn parse_tunables(text: &str) -> Tunables {
    let get = |name: &str| {
        text.lines().find_map(|l| {
            let rest = l.trim().strip_prefix(name)?.strip_prefix(':')?.trim();
            let hex = rest.split_whitespace().next()?.strip_prefix("0x")?;
            usize::from_str_radix(hex, 16).ok()
        })
    };
    Tunables {
        non_temporal: get("glibc.cpu.x86_non_temporal_threshold"),
        rep_movsb: get("glibc.cpu.x86_rep_movsb_threshold"),
        rep_stosb: get("glibc.cpu.x86_rep_stosb_threshold"),
    }
}

/// The thresholds of the glibc opcost runs on (read once; empty when the
/// loader does not list them: another libc, an old glibc, not x86).
pub fn tunables() -> &'static Tunables {
    static T: OnceLock<Tunables> = OnceLock::new();
    T.get_or_init(read_tunables)
}

/// Not x86: glibc has no x86 thresholds to list, and the x86 loader (which
/// an x86 host under qemu-user emulation has) is not asked: a spawn from a
/// many-threaded process under qemu-user can hang in the emulator's fork.
#[cfg(not(target_arch = "x86_64"))]
fn read_tunables() -> Tunables {
    Tunables::default()
}

/// Asks the x86-64 dynamic loader to list its tunables.
#[cfg(target_arch = "x86_64")]
fn read_tunables() -> Tunables {
    let loaders = [
        "/lib64/ld-linux-x86-64.so.2",
        "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
        "/lib/ld-linux-x86-64.so.2",
    ];
    loaders
        .iter()
        .filter(|p| std::path::Path::new(p).exists())
        .find_map(|p| {
            let out = std::process::Command::new(p)
                .arg("--list-tunables")
                .stdin(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .output()
                .ok()?;
            let t = parse_tunables(&String::from_utf8_lossy(&out.stdout));
            t.non_temporal.is_some().then_some(t)
        })
        .unwrap_or_default()
}

/// Bytes per array: at least [`MIN_ARRAY`] ([`QUICK_ARRAY`] at quick) and
/// 4x the LLC, capped by the profile, and a whole number of blocks; a block
/// as large as that is itself past every cache, so one block is enough.
pub fn method_array(llc: Option<u64>, profile: Profile, block: usize) -> usize {
    let floor = match profile {
        Profile::Quick => QUICK_ARRAY,
        _ => MIN_ARRAY,
    } as u64;
    let want = (llc.unwrap_or(0) * LLC_FACTOR).max(floor);
    let cap = match profile {
        Profile::Quick => floor,
        Profile::Default => super::DEFAULT_MAX,
        Profile::Thorough => super::THOROUGH_MAX,
    };
    let bytes = want.min(cap);
    if block as u64 >= bytes {
        return block;
    }
    (bytes as usize).div_ceil(block) * block
}

/// The benchmarks of every (operation, method) pair.
pub fn benches() -> Vec<Box<dyn Bench>> {
    let threshold = tunables().non_temporal;
    let mut out = Vec::new();
    for op in [Op::Read, Op::Write, Op::Copy] {
        for &method in op.methods() {
            let block = method.block(threshold);
            let b = FnBench::new(
                method_id(op, method),
                method.summary(op),
                Unit::Throughput {
                    bytes_per_op: block as f64,
                },
                move |ctx: &Ctx| {
                    if let Some(why) = method.unavailable() {
                        return Err(PrepareError::Skip(why));
                    }
                    let array = method_array(ctx.host.llc_bytes(), ctx.profile, block);
                    MethodBw::new(op, method, array, block).map(|b| Box::new(b) as Box<dyn Timed>)
                },
            )
            .param("threads", "1")
            .param("method", method.name(op))
            .param("block", size_label(block as u64))
            .param("accounting", op.accounting())
            .budget_scale(METHOD_BUDGET)
            .setup_time(super::BANDWIDTH_SETUP);
            out.push(b.boxed());
        }
    }
    out
}

/// The id of one method's result.
pub fn method_id(op: Op, method: Method) -> String {
    format!(
        "memory.bandwidth.{}.{}/threads=1",
        op.name(),
        method.name(op)
    )
}

/// A prepared method: arrays of whole blocks, one block per operation.
pub struct MethodBw {
    op: Op,
    method: Method,
    arrays: Vec<Region>,
    block: usize,
    next: usize,
    warnings: Vec<String>,
    details: serde_json::Value,
}

impl MethodBw {
    /// Maps and fills the arrays (untimed).
    pub fn new(op: Op, method: Method, array: usize, block: usize) -> Result<Self, PrepareError> {
        if block == 0 || !array.is_multiple_of(block) || !block.is_multiple_of(ALIGN) {
            return Err(PrepareError::Fail(anyhow::anyhow!(
                "array of {array} bytes is not a whole number of page-aligned {block}-byte blocks"
            )));
        }
        if method.is_arm() {
            // New kernels prove themselves on a small buffer first (untimed).
            check_kernel(op, method, CHECK_BYTES)
                .map_err(|e| PrepareError::Fail(anyhow::anyhow!(e)))?;
        }
        crate::suites::bench::check_memory((array * op.arrays()) as u64)?;
        let mut arrays = Vec::new();
        for i in 0..op.arrays() {
            let mut r = Region::from_pool(array, Pages::Default)?;
            if i == 0 {
                // The source is not all zero, so a copy can be checked.
                r.as_mut_slice::<u8>().fill(1);
            }
            arrays.push(r);
        }
        let t = tunables();
        let mut warnings = Vec::new();
        if matches!(method, Method::GlibcAbove | Method::GlibcBelow) && t.non_temporal.is_none() {
            warnings.push(
                Warning::GlibcThresholdUnknown {
                    above: size_label(UNKNOWN_ABOVE as u64),
                    below: size_label(UNKNOWN_BELOW as u64),
                }
                .to_string(),
            );
        }
        let mut details = json!({
            "method": method.name(op),
            "array_bytes": array,
            "arrays": op.arrays(),
            "block_bytes": block,
            "accounting": op.accounting(),
            "glibc_non_temporal_threshold": t.non_temporal,
            "glibc_rep_movsb_threshold": t.rep_movsb,
            "glibc_rep_stosb_threshold": t.rep_stosb,
            "erms": erms(),
        });
        if method.is_arm() {
            details["sve_vector_bytes"] = json!(sve_vector_bytes());
            details["dc_zva_block_bytes"] = json!(dc_zva_block_bytes());
        }
        Ok(MethodBw {
            op,
            method,
            arrays,
            block,
            next: 0,
            warnings,
            details,
        })
    }

    /// Runs the method over block `index` of the arrays.
    fn apply(&mut self, index: usize) {
        let off = index * self.block;
        let n = self.block;
        let (op, method) = (self.op, self.method);
        let (first, rest) = self.arrays.split_at_mut(1);
        let a = &mut first[0].as_mut_slice::<u8>()[off..off + n];
        match op {
            Op::Read => {
                black_box(read(method, a));
            }
            Op::Write => write(method, a, black_box(0x5a)),
            Op::Copy => {
                let dst = &mut rest[0].as_mut_slice::<u8>()[off..off + n];
                copy(method, a, dst);
            }
        }
    }
}

impl Timed for MethodBw {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let blocks = self.arrays[0].len() / self.block;
        let start = Instant::now();
        for _ in 0..ops {
            let i = self.next;
            self.next = (i + 1) % blocks;
            self.apply(i);
        }
        Ok(start.elapsed())
    }
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }
    fn details(&self) -> Option<serde_json::Value> {
        Some(self.details.clone())
    }
}

/// Whether the CPU says `rep movsb`/`rep stosb` are fast (ERMS).
fn erms() -> Option<bool> {
    #[cfg(target_arch = "x86_64")]
    {
        Some(std::arch::is_x86_feature_detected!("ermsb"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Bytes of the set-up check of an aarch64 kernel: whole 256-byte units,
/// not a power of two.
const CHECK_BYTES: usize = 4096 + 3 * 256;

/// Runs `method` once over `n` patterned bytes (a multiple of 256) and
/// checks them: a copy equals its source, a write holds the value (zeros
/// for `dc_zva`), a read returns the sum of the 64-bit words, and the 256
/// bytes after the range are untouched. The error says what differed.
fn check_kernel(op: Op, method: Method, n: usize) -> Result<(), String> {
    const GUARD: usize = 256;
    let what = format!("{}.{} on {n} bytes", op.name(), method.name(op));
    // 64-byte aligned storage (the x86 kernels' aligned loads need it).
    let mut src_lines = vec![Line([0; 64]); (n + GUARD).div_ceil(64)];
    let mut dst_lines = src_lines.clone();
    let src: &mut [u8] = bytes_of(&mut src_lines);
    for (i, x) in src.iter_mut().enumerate() {
        *x = (i * 7 + i / 251) as u8 | 1;
    }
    let src: &[u8] = src;
    let dst: &mut [u8] = bytes_of(&mut dst_lines);
    dst.fill(0xee);
    match op {
        Op::Read => {
            let (got, want) = (read(method, &src[..n]), sum_words(&src[..n]));
            if got != want {
                return Err(format!("{what}: the sum is {got:#x}, not {want:#x}"));
            }
        }
        Op::Write => {
            write(method, &mut dst[..n], 0x5a);
            let want = if method == Method::DcZva { 0 } else { 0x5a };
            if let Some(i) = dst[..n].iter().position(|&x| x != want) {
                return Err(format!("{what}: byte {i} is {:#x}, not {want:#x}", dst[i]));
            }
        }
        Op::Copy => {
            copy(method, &src[..n], &mut dst[..n]);
            if let Some(i) = (0..n).find(|&i| dst[i] != src[i]) {
                return Err(format!(
                    "{what}: byte {i} is {:#x}, not the source's {:#x}",
                    dst[i], src[i]
                ));
            }
        }
    }
    if dst[n..].iter().any(|&x| x != 0xee) {
        return Err(format!("{what}: bytes past the end were written"));
    }
    Ok(())
}

/// 64 bytes, 64-byte aligned: a cache line of the set-up check's storage.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// The bytes of 64-byte aligned storage.
fn bytes_of(lines: &mut [Line]) -> &mut [u8] {
    // SAFETY: a Line is 64 plain bytes with no padding; the length is the
    // storage's.
    unsafe { std::slice::from_raw_parts_mut(lines.as_mut_ptr().cast::<u8>(), lines.len() * 64) }
}

/// The sum of 64-bit words (what the vector reads compute).
fn sum_words(a: &[u8]) -> u64 {
    a.chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
        .fold(0u64, |x, y| x.wrapping_add(y))
}

/// SVE's vector length in bytes (None without SVE or off aarch64).
fn sve_vector_bytes() -> Option<usize> {
    #[cfg(target_arch = "aarch64")]
    if std::arch::is_aarch64_feature_detected!("sve") {
        // SAFETY: SVE was detected.
        return Some(unsafe { arm::sve_vector_bytes() });
    }
    None
}

/// The block `dc zva` zeroes, bytes (None where it is prohibited or off aarch64).
fn dc_zva_block_bytes() -> Option<usize> {
    #[cfg(target_arch = "aarch64")]
    {
        arm::dc_zva_block()
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        None
    }
}

/// Sums `a` with `method`'s loads (libc methods do not read; callers never ask).
fn read(method: Method, a: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `a` is page-aligned and a whole number of 256-byte units;
    // the feature was detected before the benchmark was prepared.
    unsafe {
        match method {
            Method::Avx512 => return x86::read_avx512(a),
            Method::Avx2 => return x86::read_avx2(a),
            Method::Sse2 => return x86::read_sse2(a),
            _ => {}
        }
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: `a` is page-aligned and a whole number of 256-byte units;
    // SVE was detected before the benchmark was prepared.
    unsafe {
        match method {
            Method::Neon => return arm::read_neon(a),
            Method::Sve => return arm::read_sve(a),
            _ => {}
        }
    }
    let _ = method;
    a.iter().map(|&b| u64::from(b)).sum()
}

/// Fills `a` with `v` by `method`.
fn write(method: Method, a: &mut [u8], v: u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as in `read`.
    unsafe {
        match method {
            Method::RepString => return x86::rep_stosb(a, v),
            Method::Sse2 | Method::Sse2Nt => {
                return x86::write_sse2(a, v, method == Method::Sse2Nt);
            }
            Method::Avx2 | Method::Avx2Nt => {
                return x86::write_avx2(a, v, method == Method::Avx2Nt);
            }
            Method::Avx512 | Method::Avx512Nt => {
                return x86::write_avx512(a, v, method == Method::Avx512Nt);
            }
            _ => {}
        }
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: as in `read`; each feature was detected before.
    unsafe {
        match method {
            Method::Neon | Method::NeonNt => {
                return arm::write_neon(a, v, method == Method::NeonNt);
            }
            Method::Sve | Method::SveNt => {
                return arm::write_sve(a, v, method == Method::SveNt);
            }
            Method::DcZva => return arm::dc_zva(a),
            Method::Mops => return arm::set_mops(a, v),
            _ => {}
        }
    }
    let _ = method;
    a.fill(v);
}

/// Copies `src` to `dst` by `method`.
fn copy(method: Method, src: &[u8], dst: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as in `read`; the two arrays are distinct mappings of equal length.
    unsafe {
        match method {
            Method::RepString => return x86::rep_movsb(src, dst),
            Method::Sse2 | Method::Sse2Nt => {
                return x86::copy_sse2(src, dst, method == Method::Sse2Nt);
            }
            Method::Avx2 | Method::Avx2Nt => {
                return x86::copy_avx2(src, dst, method == Method::Avx2Nt);
            }
            Method::Avx512 | Method::Avx512Nt => {
                return x86::copy_avx512(src, dst, method == Method::Avx512Nt);
            }
            _ => {}
        }
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: as in `read`; the two arrays are distinct mappings of equal length.
    unsafe {
        match method {
            Method::Neon | Method::NeonNt => {
                return arm::copy_neon(src, dst, method == Method::NeonNt);
            }
            Method::Sve | Method::SveNt => {
                return arm::copy_sve(src, dst, method == Method::SveNt);
            }
            Method::Mops => return arm::copy_mops(src, dst),
            _ => {}
        }
    }
    let _ = method;
    dst.copy_from_slice(src);
}

#[cfg(target_arch = "aarch64")]
mod arm;
#[cfg(target_arch = "x86_64")]
mod x86;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tunables_are_read_from_the_loader_listing() {
        let text = "glibc.cpu.x86_rep_movsb_threshold: 0x840 (min: 0x100, max: 0xffffffffffffffff)\n\
                    glibc.cpu.x86_rep_stosb_threshold: 0x800 (min: 0x1, max: 0xffffffffffffffff)\n\
                    glibc.cpu.x86_non_temporal_threshold: 0xc000000 (min: 0x4040, max: 0xfffffffffffffff)\n";
        let t = parse_tunables(text);
        assert_eq!(t.non_temporal, Some(192 << 20));
        assert_eq!(t.rep_movsb, Some(0x840));
        assert_eq!(t.rep_stosb, Some(0x800));
        assert_eq!(parse_tunables("nothing here"), Tunables::default());
    }

    #[test]
    fn glibc_blocks_fall_on_either_side_of_the_threshold() {
        let t = 192 << 20;
        assert!(Method::GlibcAbove.block(Some(t)) > t);
        assert!(Method::GlibcBelow.block(Some(t)) < t);
        assert_eq!(Method::GlibcAbove.block(Some(t)) % ALIGN, 0);
        let small = 0x4040;
        assert!(Method::GlibcBelow.block(Some(small)) < small);
        assert!(Method::GlibcAbove.block(Some(small)) > small);
        assert_eq!(Method::Avx2.block(Some(t)), BLOCK);
        assert!(Method::GlibcBelow.block(None) < Method::GlibcAbove.block(None));
    }

    #[test]
    fn arrays_are_whole_blocks_of_at_least_256_mib_128_at_quick() {
        let a = method_array(Some(32 << 20), Profile::Default, BLOCK);
        assert_eq!(a, MIN_ARRAY);
        let a = method_array(Some(32 << 20), Profile::Quick, BLOCK);
        assert_eq!(a, QUICK_ARRAY);
        // glibc's block above a 192 MiB threshold: one block is the array
        assert_eq!(
            method_array(Some(32 << 20), Profile::Quick, 224 << 20),
            224 << 20
        );
        let a = method_array(Some(480 << 20), Profile::Default, 224 << 20);
        assert_eq!(a % (224 << 20), 0);
        assert!(a as u64 >= super::super::DEFAULT_MAX);
        assert_eq!(method_array(None, Profile::Quick, 512 << 20), 512 << 20);
    }

    #[test]
    fn every_method_moves_the_bytes_or_skips_with_a_reason() {
        for op in [Op::Read, Op::Write, Op::Copy] {
            for &m in op.methods() {
                if let Some(why) = m.unavailable() {
                    assert!(!why.is_empty());
                    continue;
                }
                let block = 16 * ALIGN;
                let mut b = MethodBw::new(op, m, 2 * block, block).unwrap();
                assert!(b.run(2).unwrap() > Duration::ZERO);
                match op {
                    Op::Write => {
                        let want = if m == Method::DcZva { 0 } else { 0x5a };
                        assert!(b.arrays[0].as_mut_slice::<u8>().iter().all(|&x| x == want))
                    }
                    Op::Copy => assert!(b.arrays[1].as_mut_slice::<u8>().iter().all(|&x| x == 1)),
                    Op::Read => {
                        let a = b.arrays[0].as_mut_slice::<u8>();
                        assert_eq!(read(m, &a[..block]), sum_words(&a[..block]));
                    }
                }
                let d = b.details().unwrap();
                assert_eq!(d["method"], m.name(op));
            }
        }
    }

    #[test]
    fn every_kernel_moves_exactly_the_bytes_it_is_given() {
        // A patterned source, several lengths (whole 256-byte units, as the
        // kernels require), a guard after the range that must not move.
        for n in [256, CHECK_BYTES, 64 << 10] {
            for op in [Op::Read, Op::Write, Op::Copy] {
                for &m in op.methods() {
                    if m.unavailable().is_none() {
                        check_kernel(op, m, n).unwrap();
                    }
                }
            }
        }
    }

    #[test]
    fn each_architecture_skips_the_others_methods_naming_it() {
        for m in [Method::Neon, Method::Sve, Method::DcZva, Method::Mops] {
            assert!(m.is_arm());
            #[cfg(not(target_arch = "aarch64"))]
            assert!(m.unavailable().unwrap().starts_with("aarch64 instructions"));
        }
        assert!(!Method::Avx2.is_arm() && !Method::GlibcAbove.is_arm());
        #[cfg(target_arch = "aarch64")]
        {
            assert_eq!(Method::Neon.unavailable(), None);
            assert!(
                Method::Avx2
                    .unavailable()
                    .unwrap()
                    .starts_with("x86_64 instructions")
            );
            assert!(Method::RepString.unavailable().is_some());
            if let Some(why) = Method::Mops.unavailable() {
                assert!(why.contains("FEAT_MOPS"), "{why}");
            }
            if let Some(why) = Method::Sve.unavailable() {
                assert!(why.contains("SVE"), "{why}");
            }
        }
    }

    #[test]
    fn a_method_the_cpu_lacks_is_a_skip_not_a_crash() {
        let ms = benches();
        assert!(
            ms.iter()
                .any(|b| b.id() == "memory.bandwidth.copy.avx2_nt/threads=1")
        );
        assert!(
            ms.iter()
                .any(|b| b.id() == "memory.bandwidth.write.rep_stosb/threads=1")
        );
        assert!(
            ms.iter()
                .any(|b| b.id() == "memory.bandwidth.read.avx512/threads=1")
        );
        #[cfg(target_arch = "x86_64")]
        if !std::arch::is_x86_feature_detected!("avx512f") {
            assert!(Method::Avx512.unavailable().unwrap().contains("avx512f"));
        }
    }
}
