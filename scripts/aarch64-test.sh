#!/usr/bin/env bash
# Cross-builds opcost for aarch64-unknown-linux-gnu and runs it under qemu's
# user-mode emulation (qemu-aarch64): proof, on every CI run, that opcost
# builds for 64-bit ARM and works there. Timings measured under emulation
# mean nothing; what is checked is that the commands run and say the right
# things:
#   - `opcost --version`, `opcost env` and `env --json` (the JSON parses, its
#     architecture is aarch64, the topology model has every CPU);
#   - `opcost list`: benchmarks are listed; an x86-only row (rdtsc, SSE,
#     AVX, rep movsb/stosb...) listed there must be skipped with its reason
#     when run;
#   - a short quick run of rows that work under emulation, and of those
#     x86-only rows, in one process (--one-process --no-save --json): every
#     row gives a result with a unit, or is skipped with a reason; none fails;
#   - ARM's own rows (syscall.cntvct and the neon, neon_nt, sve, sve_nt,
#     dc_zva and mops bandwidth methods) under `qemu-aarch64 -cpu max`:
#     each gives a result (its kernel's bytes checked at set-up) where the
#     emulated CPU has its feature (read from
#     the guest's AT_HWCAP/AT_HWCAP2, LD_SHOW_AUXV) and is skipped naming
#     the feature where it has not (qemu before 8.2 has no FEAT_MOPS); and
#     under `-cpu cortex-a57` (no SVE) the SVE rows are skipped naming SVE;
#   - with -t, the library's unit tests of the host description, of the
#     memory methods (every kernel's bytes checked against its source or
#     value) and of the syscall calls (`cargo test --lib host::
#     suites::memory::methods:: suites::syscall::calls::`), cross-built and
#     run through qemu-aarch64 (whose default CPU, max, has SVE).
#
# Usage: scripts/aarch64-test.sh [-r] [-t] [-k]
#   -r  build the release profile (default: debug, quicker to build)
#   -t  also run the `host::`, memory methods and syscall calls unit tests under emulation
#   -k  keep the run's JSON document and outputs (their directory is printed)
#
# It needs, and installs with apt-get when missing (through sudo when not
# root): the arm64 architecture in dpkg, Debian's rustc-web and cargo-web
# (rustc 1.96; the lock file needs 1.89 or newer) with the arm64 standard
# library libstd-rust-web-dev:arm64 (in /usr/lib/rustlib), the cross
# compiler gcc-aarch64-linux-gnu and libc6-dev-arm64-cross, qemu-user, and
# jq (the checks read opcost's JSON with it).
# About 1.2 GiB. apt-get runs with --no-remove: a machine's own packages are
# not ours to remove. ARM_APT_ALLOW_REMOVE=1 lets apt remove what it must
# where the machine is thrown away after the run (CI).
#
# The build uses /usr/bin's rustc and cargo, not rustup's (which has no
# aarch64 standard library unless `rustup target add` was run), and goes to
# $CARGO_TARGET_DIR (default: target/ of the checkout), under
# aarch64-unknown-linux-gnu/. qemu-aarch64 runs without `-L
# /usr/aarch64-linux-gnu`: the binary's loader is then the arm64 multiarch
# one (/lib/ld-linux-aarch64.so.1, from libc6:arm64) with its own libc; with
# -L the cross loader pairs with the multiarch libc and `opcost run` spins
# inside libc. binfmt_misc is not used (often not mounted in containers), so
# opcost's round workers, which re-execute /proc/self/exe, cannot start an
# aarch64 binary: the run is --one-process.
#
# Each step prints its time. Exit status: 0 when every check passed, 1 when
# one failed (the message says which), 2 on a usage error.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
root="$(cd "$(dirname "$0")/.." && pwd)"

release=""
unit_tests=""
keep=""
usage() { echo "usage: $0 [-r] [-t] [-k]" >&2; }
parse_options "r=release t=unit_tests k=keep h" "$@"
shift $((OPTIND - 1))
if [ $# -ne 0 ]; then usage; exit 2; fi

triple=aarch64-unknown-linux-gnu
fail() { echo "aarch64: FAILED: $*" >&2; exit 1; }
# step NAME: starts a timed step; the previous one's time is printed.
step_name=""
step_start=0
script_start=$(date +%s.%N)
step_end() {
  if [ -n "$step_name" ]; then
    printf 'aarch64: %-28s %6.1f s\n' "$step_name" "$(awk -v a="$step_start" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')"
  fi
}
step() {
  step_end
  step_name=$1
  step_start=$(date +%s.%N)
  echo "== aarch64: $1"
}

# What is missing of the toolchain and emulator, as apt package names.
missing_packages() {
  local missing=()
  # rustc-web's /usr/bin/rustc; an older Debian rustc there is too old.
  if ! [ -x /usr/bin/rustc ] || ! [ -x /usr/bin/cargo ] ||
    ! /usr/bin/rustc --version 2>/dev/null | awk '{split($2, v, "."); exit !(v[1] > 1 || v[2] >= 89)}'; then
    missing+=(rustc-web cargo-web)
  fi
  [ -d "/usr/lib/rustlib/$triple/lib" ] || missing+=(libstd-rust-web-dev:arm64)
  command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || missing+=(gcc-aarch64-linux-gnu)
  [ -e /usr/aarch64-linux-gnu/include/stdio.h ] || missing+=(libc6-dev-arm64-cross)
  command -v qemu-aarch64 >/dev/null 2>&1 || missing+=(qemu-user)
  # The checks read opcost's JSON with jq.
  command -v jq >/dev/null 2>&1 || missing+=(jq)
  echo "${missing[*]}"
}

install_tools() {
  local missing sudo="" keep_pkgs=(--no-remove)
  missing=$(missing_packages)
  if [ -z "$missing" ]; then echo "aarch64: toolchain and emulator present"; return; fi
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "aarch64: installing $missing"
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $sudo dpkg --add-architecture arm64
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  if [ "${ARM_APT_ALLOW_REMOVE:-0}" = 1 ]; then keep_pkgs=(); fi
  # shellcheck disable=SC2086 # $missing is a list of package names
  if ! $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${keep_pkgs[@]}" $missing >/dev/null; then
    fail "apt-get could not install $missing (without removing a package?); ARM_APT_ALLOW_REMOVE=1 lets it remove what it must"
  fi
  missing=$(missing_packages)
  [ -z "$missing" ] || fail "still missing after apt-get: $missing"
}

step install
install_tools

step build
export PATH="/usr/bin:$PATH" RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER=qemu-aarch64
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc
export AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
cd "$root"
target_dir=$(realpath -m "${CARGO_TARGET_DIR:-target}")
profile=debug
build_flags=(--locked --target "$triple")
if [ -n "$release" ]; then profile=release; build_flags+=(--release); fi
/usr/bin/cargo --version
/usr/bin/rustc --version
/usr/bin/cargo build "${build_flags[@]}" || fail "the cross build failed"
bin="$target_dir/$triple/$profile/opcost"
[ -x "$bin" ] || fail "no binary at $bin"
if command -v file >/dev/null 2>&1; then
  file -b "$bin" | grep -q 'ARM aarch64' || fail "$bin is not an aarch64 executable: $(file -b "$bin")"
fi

work=""
temp_dir work
if [ -n "$keep" ]; then trap - EXIT; echo "aarch64: outputs kept in $work"; fi
# Nothing the checks run is kept in the user's history.
export XDG_DATA_HOME="$work/data"
run() { qemu-aarch64 "$bin" "$@"; }

step "version and env"
version=$(run --version) || fail "opcost --version exited $?"
echo "$version"
[[ $version == opcost* ]] || fail "--version printed '$version'"
run env >"$work/env.txt" || fail "opcost env exited $?"
grep -E '^ *(model|architecture|logical CPUs|usable CPUs|release) ' "$work/env.txt" || true
grep -qE '^ *architecture +aarch64' "$work/env.txt" || fail "opcost env does not say architecture aarch64"
run env --json >"$work/env.json" || fail "opcost env --json exited $?"
jq -e . "$work/env.json" >/dev/null || fail "opcost env --json is not JSON"
arch=$(jq -r '.cpu.arch // empty' "$work/env.json")
[ "$arch" = aarch64 ] || fail "env --json: cpu.arch is '$arch', not aarch64"
ncpu=$(nproc)
topo_cpus=$(jq '.topology.cpus | length' "$work/env.json")
[ "$topo_cpus" -eq "$ncpu" ] || fail "env --json: the topology model has $topo_cpus CPUs, not $ncpu"
echo "aarch64: env --json parses: cpu.arch $arch, $topo_cpus CPUs in the topology model"

step list
run list >"$work/list.txt" || fail "opcost list exited $?"
ids=$(awk 'NR > 1 && NF && $1 ~ /\./ {print $1}' "$work/list.txt")
count=$(grep -c . <<<"$ids")
tail -n 1 "$work/list.txt"
[ "$count" -ge 500 ] || fail "opcost list shows $count benchmarks"
# Ids of methods only x86 has: a segment naming rdtsc, SSE/AVX, rep
# movsb/stosb, cpuid or rdrand.
x86=$(grep -E '(^|[./_-])(rdtsc[a-z]*|sse[0-9a-z_]*|avx[0-9a-z_]*|rep_movsb|rep_stosb|cpuid|rdrand|rdseed|x86[a-z_0-9]*)($|[./_-])' <<<"$ids" || true)
# Each must be absent or, where the row has an ARM counterpart to come,
# skipped with its reason: they are run below.
x86_rows=()
if [ -n "$x86" ]; then mapfile -t x86_rows <<<"$x86"; fi
echo "aarch64: $count benchmarks listed, ${#x86_rows[@]} of them x86-only (to be skipped with a reason)"

step "quick run (one process)"
rows=(syscall.getpid cpu.convert timer.nanosleep ipc.pipe.rtt/8B memory.latency.random/16KiB)
rc=0
run run --profile quick --one-process --no-save --json "$work/run.json" "${rows[@]}" "${x86_rows[@]}" \
  >"$work/run.txt" 2>"$work/run.err" || rc=$?
if [ "$rc" -ne 0 ]; then cat "$work/run.err" >&2; fail "opcost run exited $rc"; fi
jq -e . "$work/run.json" >/dev/null || fail "the run's JSON document does not parse"
results=$(jq '.results | length' "$work/run.json")
skipped=$(jq '.skipped | length' "$work/run.json")
echo "aarch64: $results results, $skipped skipped"
jq -r '.results[] | "  \(.id)  \(.median) \(.unit)"' "$work/run.json"
jq -r '.skipped[] | "  \(if .failed then "FAILED" else "skipped" end) \(.id): \(.reason)"' "$work/run.json"
[ "$results" -ge 5 ] || fail "the run gave $results results"
no_unit=$(jq -r '.results[] | select((.unit // "") == "" or (.median | type) != "number") | .id' "$work/run.json")
[ -z "$no_unit" ] || fail "results without a unit or a median: $no_unit"
no_reason=$(jq -r '.skipped[] | select((.reason // "") == "") | .id' "$work/run.json")
[ -z "$no_reason" ] || fail "skipped without a reason: $no_reason"
# A failure (an error, a panic) is a defect, not a skip.
failed=$(jq -r '.skipped[] | select(.failed) | "\(.id): \(.reason)"' "$work/run.json")
[ -z "$failed" ] || fail "rows failed under emulation: $failed"
for r in "${x86_rows[@]}"; do
  jq -e --arg r "$r" 'any(.skipped[]; .id == $r and (.failed | not) and (.reason // "") != "")' "$work/run.json" >/dev/null ||
    fail "the x86-only row $r was not skipped with a reason"
done
for r in "${rows[@]}"; do
  n=$(jq --arg r "$r" '[.results[], .skipped[] | select(.id | startswith($r))] | length' "$work/run.json")
  [ "$n" -ge 1 ] || fail "the run has no row for $r"
done

step "ARM methods (-cpu max, cortex-a57)"
# The guest's hardware capabilities as its loader sees them (-E: only the
# guest's loader shows them, not the host's running qemu).
auxv() { qemu-aarch64 -cpu "$1" -E LD_SHOW_AUXV=1 "$bin" --version | awk -v k="$2:" '$1 == k {v = $2} END {print v}'; }
hwcap=$(auxv max AT_HWCAP)
hwcap2=$(auxv max AT_HWCAP2)
if [ -z "$hwcap" ] || [ -z "$hwcap2" ]; then fail "no AT_HWCAP/AT_HWCAP2 from the emulated CPU's loader"; fi
has_bit() { (( (16#${1#0x} >> $2) & 1 )); }
sve=no; mops=no
if has_bit "$hwcap" 22; then sve=yes; fi   # HWCAP_SVE
if has_bit "$hwcap2" 43; then mops=yes; fi # HWCAP2_MOPS
echo "aarch64: -cpu max reports SVE: $sve, FEAT_MOPS: $mops (AT_HWCAP $hwcap, AT_HWCAP2 $hwcap2)"
arm_rows=(syscall.cntvct)
for m in read.neon read.sve write.neon write.neon_nt write.sve write.sve_nt write.dc_zva write.mops \
  copy.neon copy.neon_nt copy.sve copy.sve_nt copy.mops; do
  arm_rows+=("memory.bandwidth.$m/threads=1")
done
rc=0
qemu-aarch64 -cpu max "$bin" run --profile quick --one-process --no-save --json "$work/arm.json" "${arm_rows[@]}" \
  >"$work/arm.txt" 2>"$work/arm.err" || rc=$?
if [ "$rc" -ne 0 ]; then cat "$work/arm.err" >&2; fail "opcost run of the ARM rows exited $rc"; fi
jq -r '.results[] | "  \(.id)  \(.median) \(.unit)"' "$work/arm.json"
jq -r '.skipped[] | "  \(if .failed then "FAILED" else "skipped" end) \(.id): \(.reason)"' "$work/arm.json"
# expect ID FEATURE-PRESENT WORD: a result with a unit if the feature is
# there, else a skip (not a failure) whose reason names WORD.
expect() {
  local id=$1 have=$2 word=$3 doc=${4:-$work/arm.json}
  if [ "$have" = yes ]; then
    jq -e --arg r "$id" 'any(.results[]; .id == $r and (.unit // "") != "" and (.median | type) == "number")' "$doc" >/dev/null ||
      fail "$id gave no result under emulation, though the emulated CPU has its feature"
  else
    jq -e --arg r "$id" --arg w "$word" 'any(.skipped[]; .id == $r and (.failed | not) and (.reason | contains($w)))' "$doc" >/dev/null ||
      fail "$id was not skipped with a reason naming $word"
  fi
}
expect syscall.cntvct yes ""
jq -e '.results[] | select(.id == "syscall.cntvct") | .details.frequency_hz > 0' "$work/arm.json" >/dev/null ||
  fail "syscall.cntvct does not record the counter's frequency"
for r in "${arm_rows[@]:1}"; do
  case $r in
    *.sve/* | *.sve_nt/*) expect "$r" "$sve" SVE ;;
    *.mops/*) expect "$r" "$mops" FEAT_MOPS ;;
    *) expect "$r" yes "" ;;
  esac
done
# A CPU without SVE (nor FEAT_MOPS): those rows are skips naming it.
no_sve_rows=(memory.bandwidth.read.sve/threads=1 memory.bandwidth.copy.sve_nt/threads=1 memory.bandwidth.write.mops/threads=1)
rc=0
qemu-aarch64 -cpu cortex-a57 "$bin" run --profile quick --one-process --no-save --json "$work/a57.json" "${no_sve_rows[@]}" \
  >"$work/a57.txt" 2>"$work/a57.err" || rc=$?
if [ "$rc" -ne 0 ]; then cat "$work/a57.err" >&2; fail "opcost run under -cpu cortex-a57 exited $rc"; fi
jq -r '.skipped[] | "  cortex-a57: skipped \(.id): \(.reason)"' "$work/a57.json"
expect memory.bandwidth.read.sve/threads=1 no SVE "$work/a57.json"
expect memory.bandwidth.copy.sve_nt/threads=1 no SVE "$work/a57.json"
expect memory.bandwidth.write.mops/threads=1 no FEAT_MOPS "$work/a57.json"

if [ -n "$unit_tests" ]; then
  step "unit tests (cross)"
  /usr/bin/cargo test "${build_flags[@]}" --lib -- host:: suites::memory::methods:: suites::syscall::calls:: ||
    fail "the host::, memory methods or syscall calls unit tests failed under qemu-aarch64"
fi

step_end
printf 'aarch64: %-28s %6.1f s\n' total "$(awk -v a="$script_start" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')"
echo "aarch64: every check passed"
