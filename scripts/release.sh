#!/usr/bin/env bash
# Builds the release bundles a fleet installs from: for x86_64 and aarch64,
# opcost linked against glibc 2.17 (it starts on any Linux host with glibc
# 2.17 or newer: RHEL/CentOS 7, Amazon Linux 2, Debian 8, Ubuntu 14.04 and
# everything since), each packed with README.md, the licence files
# (LICENSE-MIT, LICENSE-APACHE) and THIRD-PARTY.txt (the crates and C
# libraries linked into the binary, their licences, and the full text of
# every licence file they carry, each distinct text once) into
#   DIR/opcost-VERSION-x86_64-linux.tar.gz
#   DIR/opcost-VERSION-aarch64-linux.tar.gz
#   DIR/SHA256SUMS            (sha256sum's format: check with sha256sum -c)
# where VERSION is Cargo.toml's and DIR is target/dist.
#
# The floor comes from the linker: `cargo zigbuild --target
# TRIPLE.2.17` (cargo-zigbuild, from crates.io) links with Zig (the
# ziglang package, from PyPI), which carries the symbol lists of every glibc
# since 2.17 and links against the oldest one asked for (for x86_64 linked
# once more with identical code folding: scripts/release-link.sh); the C
# code a benchmark times (zstd, lz4, xz, ring) and the bundled SQLite are
# compiled by gcc as in a local build, the rest by Zig's clang
# (scripts/release-cc.sh). The binary calls the host's own glibc
# at run time (memcpy, malloc, the vDSO...), as a binary built on the host
# does. The x86_64 build uses the rustup toolchain, the aarch64 one Debian's
# rustc-web and its arm64 standard library (rustup cannot add targets where
# only Debian's mirrors are reachable; scripts/aarch64-test.sh installs
# them). Each binary is checked: no symbol versioned above GLIBC_2.17
# (`objdump -T`), at most LIMIT_MB (default 16) MB, and `opcost
# --version` runs (the aarch64 one under qemu-aarch64 when it is
# installed) and names its target and the same highest version as its
# floor.
#
# Usage: scripts/release.sh [-i] [-c] [-o DIR] [ARCH...]
#   ARCH  x86_64, aarch64 (default: both)
#   -c    also run each binary: `opcost env` and a short run of a few rows
#         (a system call, memory, a pipe, a codec, OpenSSL's AES, saved to a
#         throw-away history), the aarch64 one under qemu-aarch64 in one
#         process (the emulator cannot start opcost's round workers without
#         binfmt_misc)
#   -o    where the bundles go (default: target/dist); SHA256SUMS there
#         lists every opcost-*.tar.gz of the directory
#   -i    only install what the build needs, then stop
#
# It installs what is missing: ziglang and cargo-zigbuild (pip) and, for
# aarch64, what scripts/aarch64-test.sh -i
# installs (Debian's rustc-web and arm64 standard library, qemu-user). The
# builds go to $CARGO_TARGET_DIR (default target/) under
# TRIPLE/release/. Exit status: 0 when every bundle was built and checked,
# 1 when a build or a check failed, 2 on a usage error.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
root="$(cd "$(dirname "$0")/.." && pwd)"

FLOOR=2.17
# Flags for the C code Zig's clang compiles (see build()).
CFLAGS_ZIG="-fomit-frame-pointer"
# A binary larger than this many (decimal) megabytes fails the build: it
# is copied to every host of a fleet. The goal is 15; the x86_64 binary is
# about 15.3 MB as a position-independent executable linked by Zig, which
# folds no identical code (docs/notes/binary-size.md).
LIMIT_MB=${LIMIT_MB:-16}
out=""
install_only=""
check=""
usage() { echo "usage: $0 [-i] [-c] [-o DIR] [x86_64] [aarch64]" >&2; }
parse_options "i=install_only c=check o:out h" "$@"
shift $((OPTIND - 1))
archs=("$@")
if [ ${#archs[@]} -eq 0 ]; then archs=(x86_64 aarch64); fi
for a in "${archs[@]}"; do
  case $a in
    x86_64 | aarch64) ;;
    *) usage; exit 2 ;;
  esac
done
fail() { echo "release: FAILED: $*" >&2; exit 1; }
cd "$root"
out=$(realpath -m "${out:-target/dist}")
target_dir=$(realpath -m "${CARGO_TARGET_DIR:-target}")

install_tools() {
  # pip's scripts directory (cargo-zigbuild's wheel puts the command there).
  PATH="$PATH:$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
  if ! python3 -m ziglang version >/dev/null 2>&1 && ! command -v zig >/dev/null 2>&1; then
    echo "release: installing ziglang (pip)"
    python3 -m pip install --quiet ziglang || fail "pip could not install ziglang"
  fi
  if ! command -v cargo-zigbuild >/dev/null 2>&1; then
    # Its PyPI wheel installs in seconds; `cargo install --locked
    # cargo-zigbuild` builds the same command from crates.io in minutes.
    echo "release: installing cargo-zigbuild (pip)"
    python3 -m pip install --quiet cargo-zigbuild || fail "pip could not install cargo-zigbuild"
  fi
  # zig itself on PATH, ahead of any other: the aarch64 build puts /usr/bin
  # first, whose python3 may not be the one that has ziglang.
  if ! command -v zig >/dev/null 2>&1; then
    PATH="$(python3 -c 'import os, ziglang; print(os.path.dirname(ziglang.__file__))'):$PATH"
  fi
  zig version >/dev/null || fail "zig does not run"
  if [[ " ${archs[*]} " == *" aarch64 "* ]]; then
    "$root/scripts/aarch64-test.sh" -i || fail "the aarch64 toolchain could not be installed"
  fi
}

# build ARCH: builds the floor binary for ARCH, checks it, sets $bin.
build() {
  local arch=$1 triple="$1-unknown-linux-gnu" start took top
  local cargo=(cargo)
  start=$(date +%s)
  if [ "$arch" = aarch64 ]; then
    # Debian's toolchain: its rustc has the arm64 standard library.
    cargo=(env PATH="/usr/bin:$PATH" RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc /usr/bin/cargo)
  fi
  # The C compiler: scripts/release-cc.sh (gcc for the codecs and ring,
  # Zig's clang for the rest; cc-rs reads CC_<target> with dashes before the
  # underscored one cargo-zigbuild sets). Zig's clang keeps frame pointers
  # in optimised code where gcc omits them: said here, it omits them too.
  local gcc=gcc
  if [ "$arch" != "$(uname -m)" ]; then gcc="$arch-linux-gnu-gcc"; fi
  need "$gcc"
  # OPCOST_LINK_ICF=0: Zig's driver refuses --icf (build.rs); for x86_64,
  # scripts/release-link.sh links again with it (the local build has it
  # there only).
  local link=()
  if [ "$arch" = x86_64 ]; then
    local var="CARGO_TARGET_${triple^^}_LINKER"
    link=("${var//-/_}=$root/scripts/release-link.sh" "RELEASE_ZIG_TARGET=$arch-linux-gnu.$FLOOR")
  fi
  env OPCOST_LINK_ICF=0 "${link[@]}" "CC_$triple=$root/scripts/release-cc.sh" "RELEASE_GCC=$gcc" "CFLAGS_${triple//-/_}=$CFLAGS_ZIG" \
    "${cargo[@]}" zigbuild --quiet --locked --release --target "$triple.$FLOOR" ||
    fail "the $arch build failed"
  took=$(($(date +%s) - start))
  bin="$target_dir/$triple/release/opcost"
  [ -x "$bin" ] || fail "no binary at $bin"
  top=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sort -V | tail -n 1)
  if [ "$(printf '%s\n' "GLIBC_$FLOOR" "$top" | sort -V | tail -n 1)" != "GLIBC_$FLOOR" ]; then
    fail "$bin needs $top, above GLIBC_$FLOOR"
  fi
  local version=""
  if [ "$arch" = "$(uname -m)" ]; then
    version=$("$bin" --version) || fail "$bin --version failed"
  elif command -v "qemu-$arch" >/dev/null 2>&1; then
    version=$("qemu-$arch" "$bin" --version) || fail "$bin --version failed under qemu-$arch"
  fi
  if [ -n "$version" ]; then
    [[ $version == *"$triple"*"glibc ${top#GLIBC_} "* ]] || fail "--version says '$version'"
  fi
  local bytes
  bytes=$(stat -c %s "$bin")
  printf 'release: %s: %s bytes, highest symbol version %s, built in %d s\n' "$arch" "$bytes" "$top" "$took"
  [ "$bytes" -le $((LIMIT_MB * 1000000)) ] || fail "$bin is $bytes bytes, above $LIMIT_MB MB"
  if [ -n "$version" ]; then echo "release: $version"; fi
}

# smoke ARCH: `opcost env` and a short run with the binary just built.
smoke() {
  local arch=$1 run=("$bin") flags=() data rows n
  rows=(syscall.getpid memory.latency.random/16KiB ipc.pipe.rtt/8B codec.json.zstd-1.compress/40KiB
    crypto.aes128ctr.encrypt/1KiB)
  if [ "$arch" != "$(uname -m)" ]; then run=("qemu-$arch" "$bin"); flags=(--one-process); fi
  data=$(mktemp -d)
  XDG_DATA_HOME="$data" "${run[@]}" env >/dev/null || fail "$arch: opcost env failed"
  XDG_DATA_HOME="$data" "${run[@]}" run --profile quick "${flags[@]}" --json "$data/run.json" "${rows[@]}" \
    >"$data/run.txt" 2>"$data/run.err" || { cat "$data/run.err" >&2; fail "$arch: the short run failed"; }
  # Each pattern gives a result at least, and nothing is skipped or fails.
  n=$(jq '.results | length' "$data/run.json")
  [ "$n" -ge ${#rows[@]} ] && [ "$(jq '.skipped | length' "$data/run.json")" -eq 0 ] ||
    fail "$arch: the short run gave $n results for ${#rows[@]} patterns, and skipped $(jq -c .skipped "$data/run.json")"
  # Read whole before grep (grep -q stops reading, and pipefail would count
  # the writer's SIGPIPE as a failure).
  local runs
  runs=$(XDG_DATA_HOME="$data" "${run[@]}" runs) || fail "$arch: opcost runs failed"
  grep -q "$(jq -r '.run.id[:8]' "$data/run.json")" <<<"$runs" || fail "$arch: the run is not in the history"
  echo "release: $arch: env and a short run of ${#rows[@]} rows passed"
  rm -rf "$data"
}

# The licence files at the checkout's root; none is flagged, not invented.
licence_files() {
  find "$root" -maxdepth 1 -type f \( -iname 'LICEN[CS]E*' -o -iname 'COPYING*' \) -printf '%f\n' | sort
}

# The licence files of a package directory (its top level).
package_licences() {
  find "$1" -maxdepth 1 -type f \( -iname 'LICEN[CS]E*' -o -iname 'COPYING*' -o -iname 'UNLICEN[CS]E*' \
    -o -iname 'NOTICE*' \) | sort
}

# The C libraries compiled in and their licence files, in the source
# directory of the crate that carries them: LIBRARY<TAB>CRATE<TAB>FILE...
# (ring's BoringSSL code and BLAKE3's C and assembly are under the licence
# files at their crates' top level, taken with the crates.)
C_LIBRARIES=(
  $'Zstandard\tzstd-sys\tzstd/LICENSE'
  $'LZ4\tlz4-sys\tliblz4/lib/LICENSE'
  $'liblzma (XZ Utils)\tliblzma-sys\txz/COPYING xz/COPYING.0BSD'
)

# licence_texts LIST: the text of every licence file of the linked crates
# (LIST: name, version, licence, directory, tab-separated, a crate a line)
# and of the C libraries, each distinct text once, headed by everything
# that carries it. A crate without a licence file takes the one
# scripts/third-party-licences.tsv names. Fails, naming them, when a crate
# or a C library has no text.
licence_texts() {
  local list=$1 name version dir f lib crate files fallback other sum
  local -a missing=() found=() order=()
  local -A dirs=() holders=() first=()
  while IFS=$'\t' read -r name version _ dir; do dirs[$name]=$dir; done <<<"$list"
  add_text() { # add_text FILE LABEL
    sum=$(sha256sum "$1" | cut -d' ' -f1)
    if [ -z "${first[$sum]:-}" ]; then
      first[$sum]=$1
      order+=("$sum")
      holders[$sum]=$2
    else
      holders[$sum]+=", $2"
    fi
  }
  while IFS=$'\t' read -r name version _ dir; do
    mapfile -t found < <(package_licences "$dir")
    if [ ${#found[@]} -eq 0 ]; then
      fallback=$(awk -F'\t' -v n="$name" '$1 == n {print $2}' "$root/scripts/third-party-licences.tsv")
      other=""
      if [ -n "$fallback" ]; then other=${dirs[$fallback]:-}; fi
      if [ -n "$other" ]; then mapfile -t found < <(package_licences "$other"); fi
    fi
    if [ ${#found[@]} -eq 0 ]; then
      missing+=("$name $version ($dir)")
      continue
    fi
    for f in "${found[@]}"; do add_text "$f" "$name $version (${f##*/})"; done
  done <<<"$list"
  for lib in "${C_LIBRARIES[@]}"; do
    IFS=$'\t' read -r name crate files <<<"$lib"
    dir=${dirs[$crate]:-}
    if [ -z "$dir" ]; then
      missing+=("$name: $crate is not linked")
      continue
    fi
    for f in $files; do
      if [ -f "$dir/$f" ]; then add_text "$dir/$f" "$name ($crate: $f)"; else missing+=("$name ($dir/$f)"); fi
    done
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "release: no licence text found for:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    echo "release: a line in scripts/third-party-licences.tsv may name a linked package whose file holds the text" >&2
    return 1
  fi
  echo "The licence texts (${#order[@]} distinct), each after the list of what carries it."
  echo "SQLite carries no licence file: it is in the public domain; its source"
  echo "(sqlite3.c, in libsqlite3-sys) says: \"The author disclaims copyright to this"
  echo "source code. In place of a legal notice, here is a blessing: May you do"
  echo "good and not evil. May you find forgiveness for yourself and forgive"
  echo "others. May you share freely, never taking more than you give.\""
  for sum in "${order[@]}"; do
    printf '\n%s\n' "=========================================================================="
    fold -s -w 76 <<<"${holders[$sum]}"
    printf '%s\n\n' "--------------------------------------------------------------------------"
    cat "${first[$sum]}"
  done
}

# third_party TRIPLE: the notice of what the binary for TRIPLE carries that
# others wrote: every crate linked into it (from `cargo metadata`: name,
# version and the licence it declares), the C libraries some of them
# compile in, and the texts of their licences (licence_texts).
third_party() {
  local list table texts
  list=$(cargo metadata --format-version 1 --locked --filter-platform "$1" | jq -r -f "$root/scripts/third-party.jq") ||
    return 1
  [ -n "$list" ] || return 1
  table=$(cut -f1-3 <<<"$list" | sort -f | column -t -s $'\t')
  texts=$(licence_texts "$list") || return 1
  cat <<EOF
opcost $version ($1) contains code written by others, under their licences.

The Rust standard library: MIT OR Apache-2.0.

C and assembly code compiled into the binary by the crates that carry it:
  SQLite      (libsqlite3-sys)  public domain
  Zstandard   (zstd-sys)        BSD-3-Clause
  LZ4         (lz4-sys)         BSD-2-Clause
  liblzma     (liblzma-sys)     0BSD (from XZ Utils)
  BoringSSL   (ring)            Apache-2.0 AND ISC, as ring declares
  BLAKE3      (blake3)          CC0-1.0 OR Apache-2.0
OpenSSL's libcrypto is not in the binary: the crypto suite loads the
host's own, when there is one, at run time.

The crates linked into the binary (name, version, licence as declared by
the crate; each from https://crates.io/crates/NAME/VERSION):

$table

$texts
EOF
}

install_tools
if [ -n "$install_only" ]; then exit 0; fi
need objdump sha256sum tar jq column
version=$(awk -F'"' '/^\[/ {p = ($0 == "[package]")} p && /^version *=/ {print $2; exit}' Cargo.toml)
[ -n "$version" ] || fail "no version in Cargo.toml's [package]"
mapfile -t licences < <(licence_files)
if [ ${#licences[@]} -eq 0 ]; then
  declared=$(awk -F'"' '/^\[/ {p = ($0 == "[package]")} p && /^license *=/ {print $2; exit}' Cargo.toml)
  echo "release: warning: no LICENSE or COPYING file at the checkout's root, and Cargo.toml declares ${declared:-no licence}: the bundles carry none" >&2
fi
# Reproducible archives: files dated by the commit, owned by root.
stamp=$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)
mkdir -p "$out"
for arch in "${archs[@]}"; do
  build "$arch"
  if [ -n "$check" ]; then smoke "$arch"; fi
  name="opcost-$version-$arch-linux"
  stage=$(mktemp -d)
  mkdir "$stage/$name"
  install -m 755 "$bin" "$stage/$name/opcost"
  install -m 644 README.md "$stage/$name/"
  for f in "${licences[@]}"; do install -m 644 "$f" "$stage/$name/"; done
  third_party "$arch-unknown-linux-gnu" >"$stage/$name/THIRD-PARTY.txt" ||
    fail "THIRD-PARTY.txt for $arch: cargo metadata listed no crates, or a licence text is missing (above)"
  tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$stamp" \
    -cf - "$name" | gzip -n -9 >"$out/$name.tar.gz"
  rm -rf "$stage"
  echo "release: $out/$name.tar.gz ($(stat -c %s "$out/$name.tar.gz") bytes)"
done
(cd "$out" && sha256sum opcost-*.tar.gz >SHA256SUMS && cat SHA256SUMS)
