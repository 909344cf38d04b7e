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
#   - with -t, the whole test suite (`cargo test`: the library's and the
#     binary's unit tests and every integration test of tests/), cross-built
#     and run through qemu-aarch64 (whose default CPU, max, has SVE) with
#     OPCOST_EMULATED=1: the tests on the list below return early there,
#     each saying why; every other test must pass. The crate has no doc
#     tests (no code block in its doc comments). Each test binary runs
#     watched: one silent for TEST_SILENCE seconds has hung in the emulator
#     and is killed and run once more, its tests one at a time (a second
#     hang fails the script).
#   - with -q, the quick profile over every area (`opcost run --profile
#     quick`, rounds in worker processes as by default) under emulation,
#     with --samples 3 --rounds 1 (the whole quick profile takes too long
#     under emulation: see EMULATED_RUN_FLAGS): every area of opcost
#     (syscall, memory, cpu, ipc, process, storage, text, codec, crypto,
#     net, timer, topology) gives results, and no row fails.
#
# Emulation-only exceptions (OPCOST_EMULATED=1; at most 12, each a call of
# `emulation_exception(reason)` in the test, which prints the reason; the
# script counts them and fails past 12):
#   - cmdtime::child::tests::a_missing_program_is_named: qemu-user runs
#     posix_spawn's clone(CLONE_VM | CLONE_VFORK) as a fork, so the failed
#     exec is not passed back (the child exits 127);
#   - os::numa::tests::a_touched_page_is_on_a_node_and_an_untouched_one_is_not_present:
#     qemu-user 7.2 has no move_pages (ENOSYS);
#   - suites::memory::numa::tests::memory_bound_to_this_machines_first_node_is_found_there:
#     nor mbind (ENOSYS);
#   - suites::ipc::notify::tests::fanotify_without_the_capability_skips:
#     nor fanotify_init (ENOSYS);
#   - tests/process.rs the_scan_finds_an_orphaned_grandchild: qemu-user 7.2
#     refuses PR_SET_CHILD_SUBREAPER (EINVAL), so the orphan goes to init;
#     the other tests of that file run without the subreaper (they then see
#     only the processes still in the test's tree);
#   - tests/syscall.rs vdso_clock_gettime_is_cheaper_than_its_raw_syscall_twin:
#     under qemu-user a system call is a call into the emulator, not a trap
#     to the kernel, so the vDSO's gain does not hold (285 ns vs 263 ns);
#   - tests/net.rs a_crowd_of_slow_connections_reopened_at_once_cannot_shut_the_responder:
#     qemu-user keeps memory for every guest thread started (the
#     responder's handshake threads, reopened by the crowd), so its RSS
#     bound measures the emulator (63 MiB grew to 745 MiB);
#   - tests/memory_cpu.rs a_division_chain_is_slower_than_an_add_chain:
#     under qemu-user an instruction's latency is the emulator's (an add
#     link 36 ns, a division link 37 ns; it passed once, failed once).
# Not exceptions but bent under emulation: tests/cli.rs's Ctrl-C test waits
# 8 s, not 1.5 s, for the first sample before interrupting.
#
# Executing aarch64 binaries: the integration tests start the opcost binary
# (an aarch64 executable) and opcost's round workers re-execute
# /proc/self/exe, so -t and -q need the kernel to run aarch64 executables
# through qemu-aarch64: binfmt_misc. When an aarch64 executable does not
# already run, the script (as root: CI is) mounts binfmt_misc at
# /proc/sys/fs/binfmt_misc if it is not mounted and registers qemu-aarch64
# for aarch64 ELF files with the F flag (the interpreter opened now, so it
# works in any mount namespace); at exit it removes the registration and
# unmounts what it mounted, leaving the machine as it found it (a run killed
# with SIGKILL leaves them: `echo -1 >
# /proc/sys/fs/binfmt_misc/qemu-aarch64; umount /proc/sys/fs/binfmt_misc`).
# The registration is the kernel's, seen by every process of the machine
# while the script runs (the alternative, binfmt_misc in a user namespace of
# its own, loses the network-namespace tests that need real root). Cargo's
# runner (qemu-aarch64) starts the test binaries themselves.
#
# Usage: scripts/aarch64-test.sh [-i] [-r] [-t] [-q] [-k]
#   -i  only install the toolchain and emulator, then stop (CI runs this in
#       the background while the x86 steps build, since it is mostly download)
#   -r  build the release profile (default: debug, quicker to build)
#   -t  also run the whole test suite under emulation (binfmt_misc, root)
#   -q  also run the quick profile over every area under emulation (binfmt_misc, root)
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

install_only="" release="" unit_tests="" quick="" keep=""
usage() { echo "usage: $0 [-i] [-r] [-t] [-q] [-k]" >&2; }
parse_options "i=install_only r=release t=unit_tests q=quick k=keep h" "$@"
shift $((OPTIND - 1))
if [ $# -ne 0 ]; then usage; exit 2; fi

triple=aarch64-unknown-linux-gnu
# The -q run's effort: fewer samples and rounds than the quick profile's,
# which under emulation would take too long: it checks that every area
# gives results, not their intervals (one round: 199 s; two: 353 s).
EMULATED_RUN_FLAGS=${EMULATED_RUN_FLAGS:---samples 3 --rounds 1}
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

# Under qemu-user a process that forks while other threads run can hang in
# the emulator (seen twice in CI: two tests of one binary waited for ever on
# a child that never ran; later the library's PID cache check, a raw clone,
# hung in both attempts of one CI run, and never in 8 runs here). A test
# binary that prints nothing for this many seconds is taken as hung, killed
# and run once more with one test at a time (--test-threads=1: no other
# test's thread starts or ends while a test forks; the library's 752 tests
# take 86 s so, 49 s two at a time). libtest prints a line when a test
# passes 60 s, and under emulation on 2 cores no binary here went more than
# about 70 s without printing (the slowest binaries, text, memory_cpu and
# storage, took 100-125 s with a few tests each): 300 s leaves room for a
# machine four times slower, and a hang costs 5 minutes, not 10.
TEST_SILENCE=${TEST_SILENCE:-300}
QUICK_LIMIT=${QUICK_LIMIT:-900}
# run_watched LOG SILENCE CMD...: runs CMD in a session of its own, its
# output shown and written to LOG; when CMD prints nothing for SILENCE
# seconds, kills every process of its session and returns 124, else
# returns CMD's exit status.
run_watched() {
  local log=$1 silence=$2 line rc pid fd fifo
  shift 2
  : >"$log"
  fifo="$(mktemp -u)"
  mkfifo "$fifo"
  setsid "$@" >"$fifo" 2>&1 &
  pid=$!
  exec {fd}<"$fifo"
  rm -f "$fifo"
  while true; do
    line=""
    rc=0
    IFS= read -r -t "$silence" line <&"$fd" || rc=$?
    if [ "$rc" -eq 0 ]; then
      printf '%s\n' "$line" | tee -a "$log"
      continue
    fi
    if [ "$rc" -gt 128 ]; then
      pkill -KILL -s "$pid" 2>/dev/null || true
      exec {fd}<&-
      wait "$pid" 2>/dev/null || true
      return 124
    fi
    # The end of the output, perhaps a last line without its newline.
    if [ -n "$line" ]; then printf '%s\n' "$line" | tee -a "$log"; fi
    break
  done
  exec {fd}<&-
  rc=0
  wait "$pid" || rc=$?
  return "$rc"
}

step install
install_tools
if [ -n "$install_only" ]; then
  step_end
  exit 0
fi

step build
export PATH="/usr/bin:$PATH" RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER=qemu-aarch64
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc
# No debug information in the cross build (unless the caller asks for it):
# the debug profile's line tables made the test binaries several GiB, and a
# CI machine's disk ran out linking them; a failed assertion still names
# its file and line.
export CARGO_PROFILE_DEV_DEBUG=${CARGO_PROFILE_DEV_DEBUG:-0}
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
if [ -n "$keep" ]; then echo "aarch64: outputs kept in $work"; fi

# binfmt_setup: makes the kernel run aarch64 executables through
# qemu-aarch64 (see the top of the script); cleanup undoes what it did.
binfmt=/proc/sys/fs/binfmt_misc
binfmt_mounted=""
binfmt_registered=""
cleanup() {
  if [ -n "$binfmt_registered" ]; then echo -1 >"$binfmt/qemu-aarch64" || true; fi
  if [ -n "$binfmt_mounted" ]; then umount "$binfmt" || true; fi
  if [ -z "$keep" ]; then rm -rf "$work"; fi
}
trap cleanup EXIT
binfmt_setup() {
  if "$bin" --version >/dev/null 2>&1; then
    echo "aarch64: aarch64 executables already run here (binfmt_misc: $(head -n 2 "$binfmt/qemu-aarch64" 2>/dev/null | tr '\n' ' '))"
    return
  fi
  [ "$(id -u)" -eq 0 ] || fail "-t and -q need aarch64 executables to run (binfmt_misc): run as root"
  if ! [ -e "$binfmt/register" ]; then
    mount -t binfmt_misc binfmt_misc "$binfmt" || fail "cannot mount binfmt_misc at $binfmt"
    binfmt_mounted=1
  fi
  [ -e "$binfmt/qemu-aarch64" ] && fail "$binfmt/qemu-aarch64 is registered but aarch64 executables do not run"
  # qemu's own magic and mask for aarch64 ELF executables (qemu-binfmt-conf.sh).
  printf '%s' ':qemu-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:'"$(command -v qemu-aarch64)"':F' \
    >"$binfmt/register" || fail "cannot register qemu-aarch64 in binfmt_misc"
  binfmt_registered=1
  "$bin" --version >/dev/null || fail "aarch64 executables still do not run through binfmt_misc"
  echo "aarch64: qemu-aarch64 registered in binfmt_misc for this run (removed at exit)"
}
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

if [ -n "$unit_tests$quick" ]; then
  step binfmt_misc
  binfmt_setup
fi

if [ -n "$quick" ]; then
  step "quick profile, every area"
  # It takes about 200 s; past QUICK_LIMIT it is taken as hung in the
  # emulator (see TEST_SILENCE), stopped and run once more.
  for attempt in 1 2; do
    rc=0
    # shellcheck disable=SC2086 # EMULATED_RUN_FLAGS is a list of options
    timeout -k 20 "$QUICK_LIMIT" qemu-aarch64 "$bin" run --profile quick $EMULATED_RUN_FLAGS --no-save --json "$work/quick.json" \
      >"$work/quick.txt" 2>"$work/quick.err" || rc=$?
    if [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ]; then break; fi
    echo "aarch64: the quick run took more than $QUICK_LIMIT s (attempt $attempt): hung in the emulator, stopped" >&2
    tail -n 5 "$work/quick.err" >&2
  done
  if [ "$rc" -ne 0 ]; then tail -n 40 "$work/quick.err" >&2; fail "opcost run --profile quick exited $rc"; fi
  jq -e . "$work/quick.json" >/dev/null || fail "the quick run's JSON document does not parse"
  jq -r '"aarch64: quick run: \(.results | length) results, \([.skipped[] | select(.failed | not)] | length) skipped, \([.skipped[] | select(.failed)] | length) failed"' "$work/quick.json"
  jq -r '[.results[].area] | group_by(.) | map("  \(.[0]): \(length) results") | .[]' "$work/quick.json"
  failed=$(jq -r '.skipped[] | select(.failed) | "  \(.id): \(.reason)"' "$work/quick.json")
  [ -z "$failed" ] || fail "rows failed in the quick run under emulation:
$failed"
  for area in syscall memory cpu ipc process storage text codec crypto net timer topology; do
    jq -e --arg a "$area" 'any(.results[]; .area == $a and (.median | type) == "number" and (.unit // "") != "")' \
      "$work/quick.json" >/dev/null || fail "the quick run has no result in the $area area"
  done
fi

if [ -n "$unit_tests" ]; then
  step "whole test suite (cross)"
  # Each call of emulation_exception is one exception (not its definitions).
  n=$(grep -rh 'emulation_exception(' "$root/src" "$root/tests" | grep -vc 'fn emulation_exception' || true)
  echo "aarch64: $n emulation-only exceptions in the tests"
  [ "$n" -le 12 ] || fail "$n emulation-only exceptions, more than the 12 allowed"
  # The test binaries (the library's, the binary's and one per file of
  # tests/), each run as cargo test runs it (from the checkout's root) but
  # watched: see run_watched.
  /usr/bin/cargo test "${build_flags[@]}" --no-run --message-format=json-render-diagnostics \
    >"$work/test-build.json" || fail "the cross build of the tests failed"
  mapfile -t test_bins < <(jq -r 'select(.reason == "compiler-artifact" and .profile.test and .executable != null) | .executable' "$work/test-build.json")
  [ "${#test_bins[@]}" -gt 0 ] || fail "the cross build gave no test binary"
  echo "aarch64: ${#test_bins[@]} test binaries"
  : >"$work/tests.txt"
  failed_bins=()
  hung=0
  for exe in "${test_bins[@]}"; do
    name=$(basename "$exe")
    threads=()
    for attempt in 1 2; do
      echo "== aarch64: tests of ${name%-*} (attempt $attempt${threads[*]:+, ${threads[*]}})"
      rc=0
      OPCOST_EMULATED=1 run_watched "$work/attempt.txt" "$TEST_SILENCE" qemu-aarch64 "$exe" "${threads[@]}" || rc=$?
      if [ "$rc" -ne 124 ]; then break; fi
      hung=$((hung + 1))
      echo "aarch64: ${name%-*} printed nothing for $TEST_SILENCE s: the emulator hung (killed); running then:" >&2
      grep 'has been running for over' "$work/attempt.txt" >&2 || echo "  (no test named)" >&2
      threads=(--test-threads=1)
    done
    cat "$work/attempt.txt" >>"$work/tests.txt"
    if [ "$rc" -ne 0 ]; then failed_bins+=("${name%-*} (exit $rc)"); fi
  done
  awk '/^test result:/ {p += $4; f += $6; i += $8} END {printf "aarch64: tests: %d passed, %d failed, %d ignored\n", p, f, i}' "$work/tests.txt"
  echo "aarch64: $hung test binary runs hung under the emulator and were run again"
  [ "${#failed_bins[@]}" -eq 0 ] || fail "tests failed under qemu-aarch64 (see above): ${failed_bins[*]}"
fi

step_end
printf 'aarch64: %-28s %6.1f s\n' total "$(awk -v a="$script_start" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')"
echo "aarch64: every check passed"
