//! The codecs and their levels, each behind one compress and one
//! decompress call on whole buffers.
//!
//! Every call handles the whole input in one go, as a program that
//! compresses a file or a message would: one-shot block calls for lz4 and
//! snappy (as `lz4 -b`), their streaming readers over an in-memory slice for
//! gzip, brotli, xz and bzip2 (what their tools do per file). zstd
//! compresses with `ZSTD_compress2` and decompresses with
//! `ZSTD_decompressStream`, keeping both contexts between calls, exactly as
//! `zstd -b` does; the others set up their state per call (for xz at level 9
//! that is a 674 MiB match finder, a real cost on small inputs).
//! Output buffers are kept and stay initialised between calls, so neither
//! allocation nor zeroing of the output is timed.

use std::io::{self, Read};

/// A compressor, the way its format is written on disk (gzip with its
/// header and CRC, xz with its CRC64, lz4 and snappy as raw blocks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Codec {
    /// Zstandard (libzstd).
    Zstd,
    /// LZ4 block format (liblz4, `LZ4_compress_default`).
    Lz4,
    /// gzip: deflate with header and CRC32 (flate2 on zlib-rs).
    Gzip,
    /// Brotli (the Rust port of the reference encoder).
    Brotli,
    /// xz: LZMA2 in the .xz container with a CRC64 (liblzma).
    Xz,
    /// bzip2 (libbz2-rs, 900 KB blocks).
    Bzip2,
    /// Snappy raw blocks (the `snap` crate).
    Snappy,
}

/// Every codec and the levels measured, fastest level first.
pub const LEVELS: &[(Codec, &[u32])] = &[
    (Codec::Lz4, &[1]),
    (Codec::Snappy, &[1]),
    (Codec::Zstd, &[1, 3, 9, 19]),
    (Codec::Gzip, &[1, 6, 9]),
    (Codec::Brotli, &[1, 5, 11]),
    (Codec::Xz, &[0, 6, 9]),
    (Codec::Bzip2, &[9]),
];

/// Brotli's window (log2 of bytes): the library's default.
const BROTLI_LGWIN: u32 = 22;
/// Brotli's internal buffer for the streaming reader.
const BROTLI_BUFFER: usize = 64 * 1024;

impl Codec {
    /// The codec's short name, used in ids.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Zstd => "zstd",
            Codec::Lz4 => "lz4",
            Codec::Gzip => "gzip",
            Codec::Brotli => "brotli",
            Codec::Xz => "xz",
            Codec::Bzip2 => "bzip2",
            Codec::Snappy => "snappy",
        }
    }

    /// The library that does the work, recorded with each result.
    pub fn library(self) -> &'static str {
        match self {
            Codec::Zstd => "libzstd (zstd crate)",
            Codec::Lz4 => "liblz4 (lz4 crate)",
            Codec::Gzip => "zlib-rs (flate2 crate)",
            Codec::Brotli => "brotli crate",
            Codec::Xz => "liblzma (liblzma crate)",
            Codec::Bzip2 => "libbz2-rs (bzip2 crate)",
            Codec::Snappy => "snap crate",
        }
    }

    /// The version of the C library linked in, where it reports one
    /// (zstd and lz4, the two compared with their command-line tools'
    /// `-b` modes, which may be built on another release).
    pub fn library_version(self) -> Option<String> {
        match self {
            Codec::Zstd => Some(zstd::zstd_safe::version_string().to_string()),
            Codec::Lz4 => {
                let v = lz4::version();
                Some(format!("{}.{}.{}", v / 10_000, v / 100 % 100, v % 100))
            }
            _ => None,
        }
    }
}

/// A codec at a level, with the state it keeps between calls.
pub struct Coder {
    codec: Codec,
    level: u32,
    zstd_c: Option<zstd::bulk::Compressor<'static>>,
    zstd_d: Option<zstd::zstd_safe::DCtx<'static>>,
    snap_c: snap::raw::Encoder,
    snap_d: snap::raw::Decoder,
}

impl Coder {
    /// A coder for `codec` at `level`.
    pub fn new(codec: Codec, level: u32) -> io::Result<Coder> {
        let (zstd_c, zstd_d) = if codec == Codec::Zstd {
            (
                Some(zstd::bulk::Compressor::new(level as i32)?),
                Some(zstd::zstd_safe::DCtx::create()),
            )
        } else {
            (None, None)
        };
        Ok(Coder {
            codec,
            level,
            zstd_c,
            zstd_d,
            snap_c: snap::raw::Encoder::new(),
            snap_d: snap::raw::Decoder::new(),
        })
    }

    /// Compresses `input` into `out` (kept initialised, grown as needed);
    /// returns the compressed length.
    pub fn compress(&mut self, input: &[u8], out: &mut Vec<u8>) -> io::Result<usize> {
        let level = self.level;
        match self.codec {
            Codec::Zstd => {
                fit(out, zstd::zstd_safe::compress_bound(input.len()));
                let c = self.zstd_c.as_mut().ok_or_else(no_state)?;
                c.compress_to_buffer(input, &mut out[..])
            }
            Codec::Lz4 => {
                fit(out, lz4::block::compress_bound(input.len())?);
                lz4::block::compress_to_buffer(input, None, false, &mut out[..])
            }
            Codec::Snappy => {
                fit(out, snap::raw::max_compress_len(input.len()));
                self.snap_c
                    .compress(input, &mut out[..])
                    .map_err(io::Error::other)
            }
            Codec::Gzip => read_into(
                flate2::bufread::GzEncoder::new(input, flate2::Compression::new(level)),
                out,
            ),
            Codec::Brotli => read_into(
                brotli::CompressorReader::new(input, BROTLI_BUFFER, level, BROTLI_LGWIN),
                out,
            ),
            Codec::Xz => read_into(liblzma::bufread::XzEncoder::new(input, level), out),
            Codec::Bzip2 => read_into(
                bzip2::bufread::BzEncoder::new(input, bzip2::Compression::new(level)),
                out,
            ),
        }
    }

    /// Decompresses `packed` (of an input of `original` bytes) into `out`;
    /// returns the decompressed length.
    pub fn decompress(
        &mut self,
        packed: &[u8],
        original: usize,
        out: &mut Vec<u8>,
    ) -> io::Result<usize> {
        match self.codec {
            Codec::Zstd => {
                // The streaming call `zstd -b` times, into a buffer of the
                // original size: as a file decompressor works.
                fit(out, original);
                let d = self.zstd_d.as_mut().ok_or_else(no_state)?;
                d.reset(zstd::zstd_safe::ResetDirective::SessionOnly)
                    .map_err(zstd_error)?;
                let mut input = zstd::zstd_safe::InBuffer::around(packed);
                let mut output = zstd::zstd_safe::OutBuffer::around(&mut out[..original]);
                loop {
                    let more = d
                        .decompress_stream(&mut output, &mut input)
                        .map_err(zstd_error)?;
                    if more == 0 {
                        break;
                    }
                    if output.pos() == original {
                        return Err(io::Error::other(
                            "zstd: the data decompresses to more than the input's size",
                        ));
                    }
                }
                Ok(output.pos())
            }
            Codec::Lz4 => {
                fit(out, original);
                let n = i32::try_from(original).map_err(io::Error::other)?;
                lz4::block::decompress_to_buffer(packed, Some(n), &mut out[..])
            }
            Codec::Snappy => {
                fit(
                    out,
                    snap::raw::decompress_len(packed).map_err(io::Error::other)?,
                );
                self.snap_d
                    .decompress(packed, &mut out[..])
                    .map_err(io::Error::other)
            }
            Codec::Gzip => read_into(flate2::bufread::GzDecoder::new(packed), out),
            Codec::Brotli => read_into(brotli::Decompressor::new(packed, BROTLI_BUFFER), out),
            Codec::Xz => read_into(liblzma::bufread::XzDecoder::new(packed), out),
            Codec::Bzip2 => read_into(bzip2::bufread::BzDecoder::new(packed), out),
        }
    }
}

fn zstd_error(code: zstd::zstd_safe::ErrorCode) -> io::Error {
    io::Error::other(format!("zstd: {}", zstd::zstd_safe::get_error_name(code)))
}

fn no_state() -> io::Error {
    io::Error::other("codec state missing")
}

/// Grows `buf` (zero-filled once) to at least `len` bytes; never shrinks it,
/// so the bytes stay initialised across calls and nothing is zeroed again.
pub(super) fn fit(buf: &mut Vec<u8>, len: usize) {
    if buf.len() < len {
        buf.resize(len, 0);
    }
}

/// Reads `r` to its end into `buf` from offset 0 (growing it when full);
/// returns the number of bytes read. Unlike `read_to_end`, bytes already
/// initialised by an earlier call are not zeroed again.
fn read_into(mut r: impl Read, buf: &mut Vec<u8>) -> io::Result<usize> {
    const MIN_GROWTH: usize = 64 * 1024;
    let mut filled = 0;
    loop {
        if filled == buf.len() {
            let grown = buf.len() + buf.len().max(MIN_GROWTH);
            buf.resize(grown, 0);
        }
        match r.read(&mut buf[filled..]) {
            Ok(0) => return Ok(filled),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_and_level_round_trips() {
        let input: Vec<u8> = (0..50_000u32)
            .flat_map(|i| format!("{{\"id\":{i},\"ok\":true}}\n").into_bytes())
            .take(100_000)
            .collect();
        for &(codec, levels) in LEVELS {
            for &level in levels {
                let mut c = Coder::new(codec, level).unwrap();
                let (mut packed, mut back) = (Vec::new(), Vec::new());
                let n = c.compress(&input, &mut packed).unwrap();
                assert!(n < input.len() / 2, "{} {level}: {n}", codec.name());
                let m = c.decompress(&packed[..n], input.len(), &mut back).unwrap();
                assert_eq!(&back[..m], &input[..], "{} {level}", codec.name());
                // A second call on the kept buffers gives the same bytes.
                let n2 = c.compress(&input, &mut packed).unwrap();
                assert_eq!(n, n2, "{} {level}", codec.name());
            }
        }
    }

    #[test]
    fn the_c_libraries_report_a_dotted_version() {
        for c in [Codec::Zstd, Codec::Lz4] {
            let v = c.library_version().unwrap();
            assert_eq!(v.split('.').count(), 3, "{v}");
            assert!(v.split('.').all(|p| p.parse::<u32>().is_ok()), "{v}");
        }
        assert!(Codec::Gzip.library_version().is_none());
    }

    #[test]
    fn read_into_grows_and_reuses_the_buffer() {
        let data = vec![7u8; 200_000];
        let mut buf = Vec::new();
        assert_eq!(read_into(&data[..], &mut buf).unwrap(), data.len());
        assert_eq!(&buf[..data.len()], &data[..]);
        let cap = buf.len();
        assert_eq!(read_into(&data[..10], &mut buf).unwrap(), 10);
        assert_eq!(buf.len(), cap);
    }
}
