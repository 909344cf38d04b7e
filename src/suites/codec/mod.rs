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
//! Every benchmark first round-trips its input through the very coder it
//! will time and compares the bytes: a codec that does not give the input
//! back is a failed benchmark, never a number. An input and its compressed
//! form are made once and shared by the compress and decompress benchmarks
//! of that codec and by all their rounds (each round repeats the check).

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
use crate::harness::round::expected_slow;
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
/// Quick keeps to a few seconds for the whole suite; default runs every
/// level except the slowest ones on large inputs, where one operation of
/// tens of seconds would make each benchmark last minutes (thorough).
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
    if at_quick {
        Profile::Quick
    } else if tier == Tier::Large && s == Speed::Slow {
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

/// An input compressed by one codec level, made (and round-tripped) once
/// for both of its benchmarks.
struct Packed {
    source: Arc<Source>,
    codec: Codec,
    level: u32,
    packed: OnceLock<Result<Arc<Vec<u8>>, String>>,
}

impl Packed {
    /// The input and its compressed form. The first caller compresses with
    /// `coder` (the one it will time) and round-trips the output through a
    /// fresh decoder; a later caller's `coder` must give the same bytes,
    /// else its own output is round-tripped too.
    fn get(&self, coder: &mut Coder) -> Result<(Bytes, Bytes), PrepareError> {
        let input = self.source.bytes()?;
        let mut made_here = false;
        let packed = self
            .packed
            .get_or_init(|| {
                made_here = true;
                let out = self.compress_checked(coder, &input)?;
                Ok(Arc::new(out))
            })
            .clone()
            .map_err(|e| PrepareError::Fail(anyhow::anyhow!(e)))?;
        if !made_here {
            let mut out = Vec::new();
            let n = coder.compress(&input, &mut out)?;
            if out[..n] != packed[..] {
                self.compress_checked(coder, &input)
                    .map_err(|e| PrepareError::Fail(anyhow::anyhow!(e)))?;
            }
        }
        Ok((input, packed))
    }

    /// Compresses `input` with `coder`, decompresses the result with a fresh
    /// coder and checks the bytes; the compressed form, or why it failed.
    fn compress_checked(&self, coder: &mut Coder, input: &[u8]) -> Result<Vec<u8>, String> {
        let label = codec_label(self.codec, self.level);
        let mut out = Vec::new();
        let n = coder
            .compress(input, &mut out)
            .map_err(|e| format!("{label} compress: {e}"))?;
        out.truncate(n);
        let mut back = Vec::new();
        let m = Coder::new(self.codec, self.level)
            .and_then(|mut d| d.decompress(&out, input.len(), &mut back))
            .map_err(|e| format!("{label} round trip failed: decompress: {e}"))?;
        if back[..m] != input[..] {
            return Err(round_trip_error(&label, input, &back[..m]));
        }
        Ok(out)
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
/// its kind and both sizes of each result's median over three default runs
/// on a 2-vCPU AMD EPYC (Zen 4) KVM guest, made in three sittings: the
/// slow coders on 16 MiB ran 0.54-0.96x as fast in the later two as in the
/// first (a neighbour busy with the shared cache), and an estimate set by
/// the fastest sitting came out 19-27% short of the others. Only the
/// run-time estimate uses them (a first run has no history of the host); a
/// host's own runs replace them.
fn nominal_mbps(codec: Codec, level: u32, incompressible: bool) -> (f64, f64) {
    let (c, x) = match (codec, level) {
        (Codec::Lz4, _) => ((412.0, 2380.0), (6820.0, 9770.0)),
        (Codec::Snappy, _) => ((436.0, 1170.0), (7770.0, 11400.0)),
        (Codec::Zstd, 1) => ((285.0, 813.0), (2700.0, 10700.0)),
        (Codec::Zstd, 3) => ((136.0, 631.0), (1570.0, 10600.0)),
        (Codec::Zstd, 9) => ((25.5, 580.0), (164.0, 10700.0)),
        (Codec::Zstd, _) => ((1.3, 804.0), (4.2, 29300.0)),
        (Codec::Gzip, 1) => ((158.0, 350.0), (65.6, 268.0)),
        (Codec::Gzip, 6) => ((42.4, 379.0), (30.2, 1320.0)),
        (Codec::Gzip, _) => ((18.5, 390.0), (28.9, 1830.0)),
        (Codec::Brotli, 1) => ((113.0, 285.0), (1300.0, 3520.0)),
        (Codec::Brotli, 5) => ((14.2, 349.0), (92.3, 4270.0)),
        (Codec::Brotli, _) => ((0.4, 298.0), (0.8, 8390.0)),
        (Codec::Xz, 0) => ((12.9, 72.3), (3.9, 843.0)),
        (Codec::Xz, 6) => ((1.5, 82.8), (2.6, 860.0)),
        (Codec::Xz, _) => ((1.4, 78.3), (2.1, 492.0)),
        (Codec::Bzip2, _) => ((8.3, 11.5), (4.5, 6.7)),
    };
    if incompressible { x } else { c }
}

/// How long a run should expect one codec benchmark to take at `profile`,
/// over all rounds, given its `budget` ([`expected_slow`]). A round
/// prepares: the input is compressed once to make (or match) the shared
/// compressed form and decompressed to check it, and the decompress
/// benchmark decompresses once more for its own check; an operation is one
/// compression or decompression of the input. With operations of seconds
/// (bzip2-9 or xz-0 on 16 MiB, brotli-11 on 1 MiB) a round is several times
/// its budget, which a first run's estimate must know. With the speeds a
/// default run measured on this machine's class, the model came within 4%
/// of the suite's time (1658 s for 1729 s); with those of
/// [`nominal_mbps`], 1981 s against 1729, 2035 and 2316 s in three
/// sittings.
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
        Op::Compress => (t_c + t_d, t_c),
        Op::Decompress => (t_c + 2.0 * t_d, t_d),
    };
    let s = Duration::from_secs_f64;
    expected_slow(profile, budget, s(prep), s(t_op))
}

/// Loads the input, round-trips it through the coder that will be timed
/// and checks the bytes, then hands the timed loop over.
fn prepare(p: &Packed, op: Op, ctx: &Ctx) -> Result<Box<dyn Timed>, PrepareError> {
    if ctx.stopping() {
        return Err(PrepareError::Skip("the run was stopped".into()));
    }
    let mut coder = Coder::new(p.codec, p.level)?;
    let mut out = Vec::new();
    // The compress benchmark makes (or matches) the shared compressed form
    // with the coder it times; the decompress one times its own decoder.
    let (input, packed) = match op {
        Op::Compress => p.get(&mut coder)?,
        Op::Decompress => p.get(&mut Coder::new(p.codec, p.level)?)?,
    };
    if op == Op::Decompress {
        let m = coder.decompress(&packed, input.len(), &mut out)?;
        if out[..m] != input[..] {
            let label = codec_label(p.codec, p.level);
            return Err(PrepareError::Fail(anyhow::anyhow!(round_trip_error(
                &label,
                &input,
                &out[..m]
            ))));
        }
    }
    let mut details = p.source.describe();
    details["input_bytes"] = input.len().into();
    details["compressed_bytes"] = packed.len().into();
    details["ratio"] = (input.len() as f64 / packed.len().max(1) as f64).into();
    details["library"] = p.codec.library().into();
    if let Some(v) = p.codec.library_version() {
        details["library_version"] = v.into();
    }
    Ok(Box::new(CodecRun {
        coder,
        op,
        input,
        packed,
        out,
        details,
    }))
}

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
    op: Op,
    input: Arc<Vec<u8>>,
    packed: Arc<Vec<u8>>,
    out: Vec<u8>,
    details: serde_json::Value,
}

impl Timed for CodecRun {
    fn run(&mut self, ops: u64) -> anyhow::Result<Duration> {
        let start = Instant::now();
        for _ in 0..ops {
            let n = match self.op {
                Op::Compress => self.coder.compress(&self.input, &mut self.out)?,
                Op::Decompress => {
                    self.coder
                        .decompress(&self.packed, self.input.len(), &mut self.out)?
                }
            };
            black_box(n);
        }
        Ok(start.elapsed())
    }

    fn details(&self) -> Option<serde_json::Value> {
        Some(self.details.clone())
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
        // brotli-11 compresses ~0.5 MB/s: 1 MiB is seconds per operation,
        // three of them a round (matching the shared form, calibrating, a
        // sample), five rounds.
        let (budget, expected) = of("codec.json.brotli-11.compress/1MiB");
        assert!(expected > budget * 10, "{expected:?} against {budget:?}");
        assert!(expected > Duration::from_secs(15) && expected < Duration::from_secs(60));
        // Decompressing the same is quick: the round is its budget's share
        // plus the preparation, which here is mostly the compression.
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
