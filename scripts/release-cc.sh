#!/usr/bin/env bash
# The C compiler of scripts/release.sh's builds: cc-rs runs it for every
# crate that compiles C. The C code a benchmark times, the codecs' (zstd,
# LZ4, liblzma) and ring's, goes to gcc, the compiler of a local `cargo
# build --release`, so a bundle's codec and crypto rows measure the same
# machine code as a local build's; SQLite goes to gcc too (the binary
# 96 KB smaller than with Zig's clang); everything else goes to cargo-zigbuild's Zig clang,
# against glibc 2.17's headers. Zig's
# clang made zstd's code up to 17% slower than gcc's (it turns -O3 into -O2
# and keeps frame pointers; with both undone, still up to 10%: clang's own
# code; see docs/notes/binary-size.md), and ring's Ed25519 signatures 1.9x
# faster. The codecs' and ring's code calls only memory and allocation
# functions of libc, which every glibc has (SQLite calls more: its file
# offsets, below); the link (Zig's, with glibc 2.17's symbol lists)
# and release.sh's objdump check hold the floor.
#
# Environment: RELEASE_GCC (the gcc for the target), TARGET and
# CARGO_PKG_NAME (set by cargo for the build script that runs this), and
# cargo-zigbuild's CC_<target> (its Zig wrapper).
set -euo pipefail
case ${CARGO_PKG_NAME:-} in
  zstd-sys | lz4-sys | liblzma-sys | ring) exec "${RELEASE_GCC:?}" "$@" ;;
  # SQLite asks for 64-bit file offsets, which glibc 2.28's headers give by
  # fcntl64 (no such symbol in 2.17); off_t is 64 bits on both targets.
  libsqlite3-sys) exec "${RELEASE_GCC:?}" -DSQLITE_DISABLE_LFS "$@" ;;
esac
zig_cc="CC_${TARGET//-/_}"
exec "${!zig_cc:?cargo-zigbuild set no $zig_cc}" "$@"
