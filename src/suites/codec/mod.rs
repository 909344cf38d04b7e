//! Codecs (E12): which compressor and level for my data — the compressed
//! size *and* the compress and decompress speeds, on generated corpora and
//! on the user's own files (`opcost run codec --input FILE`).
//!
//! Ids are `codec.<input>.<codec>-<level>.<compress|decompress>/<size>`
//! (`codec.json.zstd-3.compress/16MiB`), so a prefix selects an input
//! (`codec.json`, `codec.file-`) and a glob a codec (`codec.*.zstd-*`).
//! Both speeds are in uncompressed bytes per second. The compressed size is
//! not a timing: it is recorded in each result's details (`input_bytes`,
//! `compressed_bytes`, `ratio`) and stated by the findings.
//!
//! Every round checks the bytes of the very coder it times, on its first
//! batch (outside the timed region): a compression must be the stored
//! compressed form or give the input back through a fresh decoder, a
//! decompression must give the input back; a codec that does not is a
//! failed benchmark, never a number. An input and its compressed form are
//! made once per process (a run measures each round in a process of its
//! own) and shared by the compress and decompress benchmarks of that codec
//! level: the first compression timed there is the stored form, or the
//! decompress benchmark makes it when it comes first. A round whose one
//! operation outlasts the calibration keeps it as a sample
//! ([`Timed::first_batch_counts`]).

pub mod codecs;
pub mod corpus;
mod findings;

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use codecs::{Codec, Coder, LEVELS};
use corpus::Kind;

use super::bench::{FnBench, Suite};
use crate::harness::round::expected_slow_counted;
use crate::harness::{Bench, Ctx, PrepareError, Profile, Timed, Unit};
use crate::host::Host;
use crate::units::size_label;

/// Size of the small generated inputs (a web response, a config file).
pub const SMALL: usize = 40 * 1024;
/// Size of the medium inputs: the large point of the quick profile.
pub const MEDIUM: usize = 1 << 20;
/// Size of the large inputs (the default profile and above).
pub const LARGE: usize = 16 << 20;
/// The largest `--input` file measured: each input is held in memory with
/// its compressed form at every codec level for the whole run (the rounds
/// of all benchmarks are interleaved), so a bigger file should be sampled.
pub const MAX_INPUT: u64 = 256 << 20;
/// Budget of a codec benchmark relative to the profile's default: there
/// are many of them, and each compresses a whole input per operation.
const BUDGET_SCALE: f64 = 0.5;

/// The codec suite.
pub fn suite() -> Suite {
    Suite {
        name: "codec",
        summary: "compressors (zstd, lz4, gzip, brotli, xz, bzip2, snappy) by level: ratio, compress and decompress speed on generated corpora and your files",
        benches,
        findings: findings::findings,
    }
}

/// A file given with `--input`, checked readable before the run starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserInput {
    /// The path as given.
    pub path: PathBuf,
    /// Its name in ids (`file-` and the sanitised file name, unique in the run).
    pub label: String,
    /// Its size in bytes when checked.
    pub len: u64,
}

/// Checks every `--input` file (exists, a regular file, readable, neither
/// empty nor larger than [`MAX_INPUT`]) and names it; the error says which
/// file and why, for an exit with status 2 before anything is measured.
pub fn check_inputs(paths: &[PathBuf]) -> Result<Vec<UserInput>, String> {
    let mut out: Vec<UserInput> = Vec::new();
    for path in paths {
        let len = super::user_file::check("--input", path, MAX_INPUT, &size_label(MAX_INPUT))?;
        let label = super::user_file::label(path, |l| out.iter().any(|u| u.label == l));
        out.push(UserInput {
            path: path.clone(),
            label,
            len,
        });
    }
    Ok(out)
}

/// Refuses `--input` files when the selection leaves out the benchmarks
/// that measure them.
pub fn check_selected(benches: &[Box<dyn Bench>], inputs: &[UserInput]) -> Result<(), String> {
    super::bench::require_selected(
        benches,
        !inputs.is_empty(),
        "codec.file-",
        "--input files are measured by the codec suite, which the patterns leave out; \
         select it (`opcost run codec.file --input FILE`)",
    )
}

/// The benchmarks of the user's files: every codec and level, gated by
/// the file's size like the generated inputs of that size.
pub fn input_benches(inputs: &[UserInput]) -> Vec<Box<dyn Bench>> {
    let mut v = Vec::new();
    for u in inputs {
        let len = usize::try_from(u.len).unwrap_or(usize::MAX);
        let source = Arc::new(Source {
            label: u.label.clone(),
            origin: Origin::File(u.path.clone()),
            len,
            data: OnceLock::new(),
        });
        v.extend(source_benches(&source, tier_of(len), Quick::File));
    }
    v
}

fn benches(_host: &Host) -> Vec<Box<dyn Bench>> {
    let mut v = Vec::new();
    for (len, tier) in [
        (SMALL, Tier::Small),
        (MEDIUM, Tier::Medium),
        (LARGE, Tier::Large),
    ] {
        for kind in corpus::KINDS {
            let source = Arc::new(Source {
                label: kind_label(kind).to_string(),
                origin: Origin::Corpus(kind),
                len,
                data: OnceLock::new(),
            });
            v.extend(source_benches(&source, tier, quick_role(kind)));
        }
    }
    v
}

/// The name of a generated input in ids.
pub fn kind_label(kind: Kind) -> &'static str {
    match kind {
        Kind::Json => "json",
        Kind::Text => "text",
        Kind::Log => "log",
        Kind::Binary => "binary",
        Kind::Random => "random",
        Kind::Compressed => "compressed",
    }
}

/// Input sizes, which decide the profiles a codec level runs at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tier {
    Small,
    Medium,
    Large,
}

/// The tier of a user's file of `len` bytes: the generated size it is closest to.
fn tier_of(len: usize) -> Tier {
    const SMALL_UP_TO: usize = 256 * 1024;
    const MEDIUM_UP_TO: usize = 4 << 20;
    if len <= SMALL_UP_TO {
        Tier::Small
    } else if len <= MEDIUM_UP_TO {
        Tier::Medium
    } else {
        Tier::Large
    }
}

/// How slow a codec level is to compress, which decides where it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Speed {
    /// Hundreds of MB/s: lz4, snappy, zstd-1.
    VeryFast,
    /// Tens to a hundred MB/s: zstd-3, gzip-1, brotli-1.
    Fast,
    /// About 10-30 MB/s: zstd-9, gzip-6/9, brotli-5, xz-0, bzip2.
    Mid,
    /// A few MB/s or less, or a costly set-up per call: zstd-19, brotli-11, xz-6/9.
    Slow,
}

fn speed(codec: Codec, level: u32) -> Speed {
    match (codec, level) {
        (Codec::Lz4 | Codec::Snappy, _) | (Codec::Zstd, 1) => Speed::VeryFast,
        (Codec::Zstd, 3) | (Codec::Gzip, 1) | (Codec::Brotli, 1) => Speed::Fast,
        (Codec::Zstd, 19) | (Codec::Brotli, 11) | (Codec::Xz, 6 | 9) => Speed::Slow,
        _ => Speed::Mid,
    }
}

/// How much of an input's grid the quick profile runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Quick {
    /// Fast levels, and the cheapest level of the codecs that have no fast one
    /// on small inputs: every codec is measured (JSON).
    Full,
    /// As `Full`, and the fastest levels also on a large file: the user's files.
    File,
    /// Fast levels only (text, binary, random).
    Lean,
    /// Nothing: kinds that add little at quick (log, compressed).
    Skip,
}

/// The lowest profile that runs `codec` at `level` on an input of `tier`.
/// Quick keeps to a few seconds for the whole suite. Default runs every
/// level on the small and large generated inputs (the two sizes the
/// findings read), except the slowest levels on large inputs, where one
/// operation of tens of seconds would make each benchmark last minutes;
/// on the medium inputs, which no finding reads, it leaves out the slowest
/// levels too (one operation of about a second, a quarter of the suite's
/// time at default). Thorough runs everything, and a user's file gets
/// every level its size allows at default.
fn min_profile(tier: Tier, quick: Quick, codec: Codec, level: u32) -> Profile {
    let s = speed(codec, level);
    let cheapest = LEVELS
        .iter()
        .any(|&(c, levels)| c == codec && levels.first() == Some(&level));
    let at_quick = match (quick, tier, s) {
        (Quick::Skip, _, _) => false,
        (_, Tier::Small, Speed::VeryFast | Speed::Fast) => true,
        (Quick::Full | Quick::File, Tier::Small, Speed::Mid) => cheapest,
        (_, Tier::Medium, Speed::VeryFast) => true,
        (Quick::File, Tier::Large, Speed::VeryFast) => true,
        _ => false,
    };
    let medium_generated = tier == Tier::Medium && quick != Quick::File;
    if at_quick {
        Profile::Quick
    } else if s == Speed::Slow && (tier == Tier::Large || medium_generated) {
        Profile::Thorough
    } else {
        Profile::Default
    }
}

/// The part of the grid the quick profile runs on a generated input.
fn quick_role(kind: Kind) -> Quick {
    match kind {
        Kind::Json => Quick::Full,
        Kind::Text | Kind::Binary | Kind::Random => Quick::Lean,
        Kind::Log | Kind::Compressed => Quick::Skip,
    }
}

/// The id segment of a codec at a level: `zstd-3`, `snappy` (no levels).
pub fn codec_label(codec: Codec, level: u32) -> String {
    match codec {
        Codec::Snappy => codec.name().to_string(),
        _ => format!("{}-{level}", codec.name()),
    }
}

/// Where an input's bytes come from.
#[derive(Debug)]
enum Origin {
    Corpus(Kind),
    File(PathBuf),
}

/// One input, shared by all its benchmarks and loaded on first use.
#[derive(Debug)]
struct Source {
    label: String,
    origin: Origin,
    len: usize,
    data: OnceLock<Result<Arc<Vec<u8>>, String>>,
}

impl Source {
    fn bytes(&self) -> Result<Arc<Vec<u8>>, PrepareError> {
        self.data
            .get_or_init(|| match &self.origin {
                Origin::Corpus(kind) => Ok(Arc::new(corpus::generate(*kind, self.len))),
                Origin::File(path) => {
                    let data = std::fs::read(path)
                        .map_err(|e| format!("reading {}: {e}", path.display()))?;
                    if data.len() != self.len {
                        return Err(format!(
                            "{} changed size during the run ({} bytes, then {})",
                            path.display(),
                            self.len,
                            data.len()
                        ));
                    }
                    Ok(Arc::new(data))
                }
            })
            .clone()
            .map_err(|e| PrepareError::Fail(anyhow::anyhow!(e)))
    }

    /// What is recorded about the input: its name and size, never its content.
    fn describe(&self) -> serde_json::Value {
        match &self.origin {
            Origin::Corpus(kind) => serde_json::json!({
                "input": self.label,
                "generated": format!("{kind:?}").to_lowercase(),
            }),
            Origin::File(path) => serde_json::json!({
                "input": self.label,
                "file": path.file_name().map(|n| n.to_string_lossy().into_owned()),
            }),
        }
    }
}

/// Bytes shared by the benchmarks of one input.
type Bytes = Arc<Vec<u8>>;

/// An input compressed by one codec level: made and round-tripped once per
/// process, then shared by both of its benchmarks and all their rounds
/// there (a run measures each round in a process of its own).
struct Packed {
    source: Arc<Source>,
    codec: Codec,
    level: u32,
    packed: OnceLock<Result<Bytes, String>>,
}

impl Packed {
    /// The compressed form of `input`: the stored one, or made here with a
    /// fresh coder and round-tripped through another when none is stored
    /// yet (the decompress benchmark prepared before the compress one).
    fn get(&self, input: &[u8]) -> Result<Bytes, PrepareError> {
        self.packed
            .get_or_init(|| {
                let mut coder = Coder::new(self.codec, self.level)
                    .map_err(|e| format!("{}: {e}", self.label()))?;
                let mut out = Vec::new();
                let n = coder
                    .compress(input, &mut out)
                    .map_err(|e| format!("{} compress: {e}", self.label()))?;
                out.truncate(n);
                self.round_trip(input, &out)?;
                Ok(Arc::new(out))
            })
            .clone()
            .map_err(|e| PrepareError::Fail(anyhow::anyhow!(e)))
    }

    /// Takes the output of a timed compression of `input`: stored after a
    /// round trip through a fresh decoder when no form is stored yet,
    /// compared with the stored form when one is (and round-tripped
    /// itself when it differs). Why it does not give the input back, else.
    fn offer(&self, input: &[u8], out: &[u8]) -> Result<(), String> {
        let mut made_here = false;
        let stored = self
            .packed
            .get_or_init(|| {
                made_here = true;
                self.round_trip(input, out)?;
                Ok(Arc::new(out.to_vec()))
            })
            .clone()?;
        if made_here || stored[..] == *out {
            return Ok(());
        }
        self.round_trip(input, out)
    }

    /// Decompresses `packed` with a fresh coder and checks that it gives
    /// `input` back.
    fn round_trip(&self, input: &[u8], packed: &[u8]) -> Result<(), String> {
        let label = self.label();
        let mut back = Vec::new();
        let m = Coder::new(self.codec, self.level)
            .and_then(|mut d| d.decompress(packed, input.len(), &mut back))
            .map_err(|e| format!("{label} round trip failed: decompress: {e}"))?;
        if back[..m] != input[..] {
            return Err(round_trip_error(&label, input, &back[..m]));
        }
        Ok(())
    }

    /// The codec level's id segment.
    fn label(&self) -> String {
        codec_label(self.codec, self.level)
    }
}

/// Compressing or decompressing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Compress,
    Decompress,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Compress => "compress",
            Op::Decompress => "decompress",
        }
    }
}

/// The compress and decompress benchmarks of every codec level on one input.
fn source_benches(source: &Arc<Source>, tier: Tier, quick: Quick) -> Vec<Box<dyn Bench>> {
    let mut v = Vec::new();
    for &(codec, levels) in LEVELS {
        for &level in levels {
            let packed = Arc::new(Packed {
                source: source.clone(),
                codec,
                level,
                packed: OnceLock::new(),
            });
            let what = codec_label(codec, level);
            for op in [Op::Compress, Op::Decompress] {
                let id = format!(
                    "codec.{}.{what}.{}/{}",
                    source.label,
                    op.name(),
                    size_label(source.len as u64)
                );
                let summary = format!(
                    "{} {} of {} bytes of {}, uncompressed bytes per second",
                    what,
                    op.name(),
                    source.len,
                    source.label
                );
                let p = packed.clone();
                let bytes = source.len;
                let incompressible = matches!(
                    source.origin,
                    Origin::Corpus(Kind::Random | Kind::Compressed)
                );
                v.push(
                    FnBench::new(
                        id,
                        summary,
                        Unit::Throughput {
                            bytes_per_op: source.len as f64,
                        },
                        move |ctx| prepare(&p, op, ctx),
                    )
                    .param("input", source.label.clone())
                    .param("input_bytes", source.len as u64)
                    .param("codec", codec.name())
                    .param("level", level)
                    .param("op", op.name())
                    .budget_scale(BUDGET_SCALE)
                    .expected_by(move |profile, budget| {
                        expected(codec, level, op, bytes, incompressible, profile, budget)
                    })
                    .min_profile(min_profile(tier, quick, codec, level))
                    .boxed(),
                );
            }
        }
    }
    v
}

/// Typical speeds of each coder, uncompressed MB/s: (compress, decompress)
/// of compressible inputs (text, json, log, binary, a user's file), then
/// of incompressible ones (random bytes, an already compressed file), on
/// which most coders go many times faster and xz and bzip2 slower. Each is
/// the harmonic mean (the one whose times add up right) over the inputs of
/// its kind and both sizes of each result's median in a default run on a
/// quiet 2-vCPU AMD EPYC (Zen 4) KVM guest (2026-11-28: steal 0, other
/// programs 1% of the CPUs). The figures they replace came from sittings
/// with a busy neighbour, 1.4-2.8x slower: a quiet first run took 0.61x of
/// what they announced. A busy host's first run takes longer than
/// announced. Only the run-time estimate uses them (a first run has no
/// history of the host); a host's own runs replace them.
fn nominal_mbps(codec: Codec, level: u32, incompressible: bool) -> (f64, f64) {
    let (c, x) = match (codec, level) {
        (Codec::Lz4, _) => ((762.0, 4260.0), (15400.0, 33300.0)),
        (Codec::Snappy, _) => ((726.0, 1930.0), (20700.0, 30400.0)),
        (Codec::Zstd, 1) => ((522.0, 1560.0), (4450.0, 30500.0)),
        (Codec::Zstd, 3) => ((315.0, 1350.0), (3130.0, 30500.0)),
        (Codec::Zstd, 9) => ((59.0, 1390.0), (770.0, 29600.0)),
        (Codec::Zstd, _) => ((3.9, 1370.0), (25.7, 46900.0)),
        (Codec::Gzip, 1) => ((322.0, 680.0), (125.0, 415.0)),
        (Codec::Gzip, 6) => ((71.7, 711.0), (60.6, 2510.0)),
        (Codec::Gzip, _) => ((26.9, 704.0), (52.5, 3110.0)),
        (Codec::Brotli, 1) => ((199.0, 503.0), (599.0, 7660.0)),
        (Codec::Brotli, 5) => ((36.1, 630.0), (252.0, 8420.0)),
        (Codec::Brotli, _) => ((0.8, 513.0), (2.6, 10400.0)),
        (Codec::Xz, 0) => ((26.8, 110.0), (10.1, 1150.0)),
        (Codec::Xz, 6) => ((5.2, 131.0), (7.9, 1170.0)),
        (Codec::Xz, _) => ((2.1, 121.0), (0.7, 609.0)),
        (Codec::Bzip2, _) => ((16.7, 51.8), (12.1, 23.5)),
    };
    if incompressible { x } else { c }
}

/// How long a run should expect one codec benchmark to take at `profile`,
/// over all rounds, given its `budget` ([`expected_slow_counted`]: an
/// operation past a third of its round's share is calibrated once and kept
/// as a sample). Each round runs in a process of its own, which makes the
/// compressed form once: the compress benchmark's first operation is it
/// when that benchmark comes first (a decompression checks it), else the
/// decompress benchmark compresses and checks it before its own first
/// operation; either comes first in half the rounds. An operation is one
/// compression or decompression of the input.
fn expected(
    codec: Codec,
    level: u32,
    op: Op,
    bytes: usize,
    incompressible: bool,
    profile: Profile,
    budget: Duration,
) -> Duration {
    let (c, d) = nominal_mbps(codec, level, incompressible);
    let (t_c, t_d) = (bytes as f64 / (c * 1e6), bytes as f64 / (d * 1e6));
    let (prep, t_op) = match op {
        Op::Compress => (t_d / 2.0, t_c),
        Op::Decompress => ((t_c + t_d) / 2.0, t_d),
    };
    let s = Duration::from_secs_f64;
    expected_slow_counted(profile, budget, s(prep), s(t_op))
}

/// Loads the input (and for decompressing, the compressed form) and hands
/// the timed loop over; the bytes are checked on its first batch.
fn prepare(p: &Arc<Packed>, op: Op, ctx: &Ctx) -> Result<Box<dyn Timed>, PrepareError> {
    if ctx.stopping() {
        return Err(PrepareError::Skip("the run was stopped".into()));
    }
    let coder = Coder::new(p.codec, p.level)?;
    let input = p.source.bytes()?;
    let packed = match op {
        Op::Compress => None,
        Op::Decompress => Some(p.get(&input)?),
    };
    // The output buffer is made as large as an operation needs and touched
    // once here, so that no batch (the first counts) grows or faults it in.
    let mut out = Vec::new();
    let room = match op {
        Op::Compress => input.len() + input.len() / 4,
        Op::Decompress => input.len(),
    };
    codecs::fit(&mut out, room + OUT_SLACK);
    let mut details = p.source.describe();
    details["input_bytes"] = input.len().into();
    details["library"] = p.codec.library().into();
    if let Some(v) = p.codec.library_version() {
        details["library_version"] = v.into();
    }
    Ok(Box::new(CodecRun {
        coder,
        p: p.clone(),
        input,
        packed,
        out,
        checked: None,
        details,
    }))
}

/// Room past an operation's output in its buffer, so that a reader that
/// fills it (gzip, brotli, xz, bzip2) finds its end without growing it.
const OUT_SLACK: usize = 64 * 1024;

/// Says where a round trip went wrong.
fn round_trip_error(codec: &str, input: &[u8], back: &[u8]) -> String {
    let at = input
        .iter()
        .zip(back)
        .position(|(a, b)| a != b)
        .unwrap_or(input.len().min(back.len()));
    format!(
        "{codec} round trip failed: {} bytes in, {} bytes back, first difference at byte {at}",
        input.len(),
        back.len()
    )
}

/// The timed loop: one whole-input compress or decompress per operation.
struct CodecRun {
    coder: Coder,
    p: Arc<Packed>,
    input: Bytes,
    /// The compressed form it decompresses (none when compressing).
    packed: Option<Bytes>,
    out: Vec<u8>,
    /// The compressed size, once the first batch's output is checked.
    checked: Option<usize>,
    details: serde_json::Value,
}

impl CodecRun {
    /// Checks the output of the batch just timed (`n` bytes): a compression
    /// must be the stored form or round-trip, a decompression must give
    /// the input back. Returns the compressed size.
    fn check(&self, n: usize) -> anyhow::Result<usize> {
        let out = &self.out[..n];
        match &self.packed {
            Some(packed) => {
                if out != &self.input[..] {
                    anyhow::bail!(round_trip_error(&self.p.label(), &self.input, out));
                }
                Ok(packed.len())
            }
            None => {
                self.p
                    .offer(&self.input, out)
                    .map_err(|e| anyhow::anyhow!(e))?;
                Ok(n)
            }
        }
    }
}

impl Timed for CodecRun {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let start = Instant::now();
        let mut n = 0;
        for _ in 0..ops {
            n = match &self.packed {
                Some(packed) => self
                    .coder
                    .decompress(packed, self.input.len(), &mut self.out)?,
                None => self.coder.compress(&self.input, &mut self.out)?,
            };
            black_box(n);
        }
        let took = start.elapsed();
        // Outside the timed region: the first batch's bytes are checked
        // (later batches run the same coder on the same bytes).
        if self.checked.is_none() && ops > 0 {
            self.checked = Some(self.check(n)?);
        }
        Ok(took)
    }

    fn first_batch_counts(&self) -> bool {
        true
    }

    fn details(&self) -> Option<serde_json::Value> {
        let mut d = self.details.clone();
        if let Some(c) = self.checked {
            d["compressed_bytes"] = c.into();
            d["ratio"] = (self.input.len() as f64 / c.max(1) as f64).into();
        }
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_run_expects_slow_coders_to_outlast_their_budget() {
        let host = Host::detect();
        let all = (suite().benches)(&host);
        let of = |id: &str| {
            let b = all.iter().find(|b| b.id() == id).expect(id);
            (b.budget(Profile::Default), b.expected(Profile::Default))
        };
        // brotli-11 compresses ~0.8 MB/s: 1 MiB is over a second per
        // operation, one a round (the calibration kept as its sample), five
        // rounds.
        let (budget, expected) = of("codec.json.brotli-11.compress/1MiB");
        assert!(expected > budget * 10, "{expected:?} against {budget:?}");
        assert!(
            expected > Duration::from_secs(5) && expected < Duration::from_secs(30),
            "{expected:?}"
        );
        // Decompressing the same is quick: the round is its budget's share
        // plus, in half the rounds, making the compressed form.
        let (budget, expected) = of("codec.json.brotli-11.decompress/1MiB");
        assert!(expected > budget, "{expected:?} against {budget:?}");
        // lz4 on 40 KiB: well inside the budget.
        let (budget, expected) = of("codec.json.lz4-1.compress/40KiB");
        assert!(expected < budget * 2, "{expected:?} against {budget:?}");
        // Quick's estimate stays its budgets: only fast coders run there.
        for b in all
            .iter()
            .filter(|b| b.runs_at(Profile::Quick) && !b.on_request())
        {
            let (q, x) = (b.budget(Profile::Quick), b.expected(Profile::Quick));
            assert!(x < q * 2, "{}: {x:?} against {q:?}", b.id());
        }
    }

    /// An input of `len` bytes of generated JSON and a codec level of it,
    /// its compressed form stored already when `stored` is given.
    fn packed(len: usize, codec: Codec, level: u32, stored: Option<Vec<u8>>) -> Arc<Packed> {
        let source = Arc::new(Source {
            label: "json".into(),
            origin: Origin::Corpus(Kind::Json),
            len,
            data: OnceLock::new(),
        });
        let packed = OnceLock::new();
        if let Some(s) = stored {
            packed.set(Ok(Arc::new(s))).unwrap();
        }
        Arc::new(Packed {
            source,
            codec,
            level,
            packed,
        })
    }

    fn compressed(input: &[u8], codec: Codec, level: u32) -> Vec<u8> {
        let mut out = Vec::new();
        let n = Coder::new(codec, level)
            .unwrap()
            .compress(input, &mut out)
            .unwrap();
        out.truncate(n);
        out
    }

    #[test]
    fn a_decompress_round_uses_the_stored_form_and_checks_the_bytes() {
        let ctx = crate::harness::test_ctx();
        let input = corpus::generate(Kind::Json, 30_000);
        // The stored form is zstd-19's, which zstd-3's decoder reads but
        // zstd-3 never makes: a decompress round that reports its size
        // decompressed the stored form, not one of its own.
        let z19 = compressed(&input, Codec::Zstd, 19);
        assert_ne!(z19.len(), compressed(&input, Codec::Zstd, 3).len());
        let p = packed(input.len(), Codec::Zstd, 3, Some(z19.clone()));
        let mut d = prepare(&p, Op::Decompress, &ctx).unwrap();
        assert!(d.run(2).is_ok());
        assert_eq!(d.details().unwrap()["compressed_bytes"], z19.len());
        // Its first batch checks the bytes it gives back: a stored form of
        // other bytes fails the round.
        let other = compressed(&corpus::generate(Kind::Log, 30_000), Codec::Zstd, 3);
        let p = packed(input.len(), Codec::Zstd, 3, Some(other));
        let mut d = prepare(&p, Op::Decompress, &ctx).unwrap();
        let err = d.run(1).unwrap_err().to_string();
        assert!(err.contains("round trip failed"), "{err}");
        // A compression that differs from the stored form is round-tripped
        // itself, and records its own size.
        let p = packed(input.len(), Codec::Zstd, 3, Some(z19));
        let mut c = prepare(&p, Op::Compress, &ctx).unwrap();
        assert!(c.run(1).is_ok());
        let own = compressed(&input, Codec::Zstd, 3).len();
        assert_eq!(c.details().unwrap()["compressed_bytes"], own);
    }

    #[test]
    fn the_first_timed_compression_is_the_stored_form() {
        let ctx = crate::harness::test_ctx();
        let p = packed(30_000, Codec::Gzip, 6, None);
        let mut c = prepare(&p, Op::Compress, &ctx).unwrap();
        assert!(p.packed.get().is_none());
        assert!(c.run(3).is_ok());
        let input = p.source.bytes().unwrap();
        let stored = p.packed.get().unwrap().clone().unwrap();
        assert_eq!(stored[..], compressed(&input, Codec::Gzip, 6)[..]);
        // Without a compress round before it, a decompress round makes it.
        let q = packed(30_000, Codec::Gzip, 6, None);
        let mut d = prepare(&q, Op::Decompress, &ctx).unwrap();
        assert!(d.run(1).is_ok());
        assert_eq!(q.packed.get().unwrap().clone().unwrap()[..], stored[..]);
    }

    #[test]
    fn ids_name_input_codec_level_op_and_size() {
        let host = Host::detect();
        let all = benches(&host);
        let per_input = LEVELS.iter().map(|(_, l)| l.len()).sum::<usize>() * 2;
        assert_eq!(all.len(), per_input * corpus::KINDS.len() * 3);
        let ids: Vec<&str> = all.iter().map(|b| b.id()).collect();
        for id in [
            "codec.json.zstd-19.compress/40KiB",
            "codec.text.lz4-1.decompress/1MiB",
            "codec.random.snappy.compress/16MiB",
            "codec.compressed.xz-9.decompress/16MiB",
            "codec.log.bzip2-9.compress/1MiB",
        ] {
            assert!(ids.contains(&id), "{id} missing");
        }
        // Quick keeps every codec, and no slow level on a large input.
        let quick: Vec<&Box<dyn Bench>> =
            all.iter().filter(|b| b.runs_at(Profile::Quick)).collect();
        for &(codec, _) in LEVELS {
            assert!(
                quick
                    .iter()
                    .any(|b| b.id().contains(&format!(".{}", codec.name()))),
                "{} not at quick",
                codec.name()
            );
        }
        assert!(!quick.iter().any(|b| b.id().ends_with("/16MiB")));
        assert!(!quick.iter().any(|b| b.id().contains("xz-9")));
        assert_eq!(quick.len(), 76);
        // Default: every level on 40 KiB; the slowest four (zstd-19,
        // brotli-11, xz-6, xz-9) neither on 1 MiB nor on 16 MiB.
        let default: Vec<&str> = all
            .iter()
            .filter(|b| b.runs_at(Profile::Default))
            .map(|b| b.id())
            .collect();
        assert_eq!(default.len(), 480);
        assert_eq!(
            default.iter().filter(|i| i.ends_with("/40KiB")).count(),
            192
        );
        for slow in ["zstd-19", "brotli-11", "xz-6", "xz-9"] {
            assert!(
                !default
                    .iter()
                    .any(|i| i.contains(&format!(".{slow}.")) && !i.ends_with("/40KiB")),
                "{slow}"
            );
        }
        let thorough = all.iter().filter(|b| b.runs_at(Profile::Thorough)).count();
        assert_eq!(thorough, all.len());
        // A user's file of the medium size keeps every level at default.
        let brotli11 = |q| min_profile(Tier::Medium, q, Codec::Brotli, 11);
        assert_eq!(brotli11(Quick::File), Profile::Default);
        assert_eq!(brotli11(Quick::Full), Profile::Thorough);
    }

    #[test]
    fn inputs_are_checked_and_named_uniquely() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("my data.json");
        std::fs::write(&a, b"{\"a\":1}").unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let b = sub.join("my data.json");
        std::fs::write(&b, b"{\"b\":2}").unwrap();
        let got = check_inputs(&[a.clone(), b]).unwrap();
        assert_eq!(got[0].label, "file-my_data_json");
        assert_eq!(got[1].label, "file-my_data_json-2");
        assert_eq!(got[0].len, 7);

        let missing = dir.path().join("nope");
        let err = check_inputs(&[missing]).unwrap_err();
        assert!(err.contains("--input") && err.contains("nope"), "{err}");
        assert!(check_inputs(&[dir.path().to_path_buf()]).is_err());
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert!(check_inputs(&[empty]).unwrap_err().contains("empty"));
    }

    #[test]
    fn a_user_file_round_trips_and_records_its_name_and_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sample.log");
        std::fs::write(&path, corpus::generate(Kind::Log, 5000)).unwrap();
        let inputs = check_inputs(&[path]).unwrap();
        let benches = input_benches(&inputs);
        let b = benches
            .iter()
            .find(|b| b.id() == "codec.file-sample_log.zstd-3.decompress/5000B")
            .expect("the zstd-3 decompress benchmark");
        let ctx = crate::harness::test_ctx();
        let mut t = b.prepare(&ctx).map_err(|e| e.to_string()).unwrap();
        assert!(t.run(2).unwrap() > Duration::ZERO);
        let d = t.details().unwrap();
        assert_eq!(d["file"], "sample.log");
        assert_eq!(d["input_bytes"], 5000);
        assert!(d["ratio"].as_f64().unwrap() > 2.0, "{d}");
    }
}
