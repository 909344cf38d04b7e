#!/usr/bin/env bash
# Make one machine's sets for the test corpus (tests/fixtures/corpus/): real
# run documents that `cargo test` replays (tests/corpus/) so that a rule
# deciding a word, a verdict or an interval is held to every machine kind.
#
#   scripts/corpus-sets.sh [-n NAME] [-s SYSCALL_RUNS] [-b BINARY]
#
# NAME defaults to the CPU vendor, the hypervisor and today's date
# (amd-kvm-2026-11-28); the documents land in tests/fixtures/corpus/NAME/,
# gzipped, with a README line each (machine, date, command). The sets are
# the ones every machine gets:
#   latency-quick-1..5          opcost run memory.latency --profile quick
#   syscall-ipc-process-codec-text-timer-quick-1..3
#   memory-storage-net-cpu-crypto-quick-1..3   (the two halves of a whole run)
#   syscall-quick-1..S          opcost run syscall --profile quick (S = 24:
#                               a history for trend and interval coverage)
#   latency-pinned-cpu0, -cpu1  two L1 rows and cpu.clock pinned with --cpu
#   default-aa-1, -2            opcost run syscall ipc process memory
#                               --profile default, twice (compare's A/A pair)
# Every run is --no-save --no-history (no history written or read: a first
# run's rounds, interval and words, whatever the machine's database holds),
# and each holds `flock -x /tmp/opcost-quiet.lock` so that no other timing
# run shares the machine with it. About 20 minutes on a 2-core guest.
set -euo pipefail
cd "$(dirname "$0")/.."
name=""
syscall_runs=24
bin=target/release/opcost
while getopts "n:s:b:" o; do
  case $o in
    n) name=$OPTARG ;;
    s) syscall_runs=$OPTARG ;;
    b) bin=$OPTARG ;;
    *) echo "usage: $0 [-n NAME] [-s SYSCALL_RUNS] [-b BINARY]" >&2; exit 2 ;;
  esac
done
if [ ! -x "$bin" ]; then cargo build --release; fi
if [ -z "$name" ]; then
  vendor=$(awk -F': ' '/^vendor_id/ {print $2; exit}' /proc/cpuinfo)
  case $vendor in
    GenuineIntel) vendor=xeon ;;
    AuthenticAMD) vendor=amd ;;
    "") vendor=$(uname -m) ;;
    *) vendor=$(echo "$vendor" | tr 'A-Z' 'a-z') ;;
  esac
  hv=$(LC_ALL=C lscpu 2>/dev/null | awk -F': *' '/^Hypervisor vendor/ {print tolower($2); exit}')
  if [ -z "$hv" ]; then
    hv=$(grep -q '^flags.* hypervisor' /proc/cpuinfo && echo vm || echo metal)
  fi
  name="$vendor-$hv-$(date +%F)"
fi
out="tests/fixtures/corpus/$name"
mkdir -p "$out"
readme="$out/README.md"
if [ ! -f "$readme" ]; then
  model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
  {
    echo "# $name"
    echo
    echo "$(nproc) CPUs, ${model:-$(uname -m)}, Linux $(uname -r), $(date +%F)."
    echo "Binary: $(git rev-parse --short HEAD). Made by scripts/corpus-sets.sh."
    echo
    echo "| file | command |"
    echo "|---|---|"
  } >"$readme"
fi
# A set already made is kept (a stopped script goes on where it was). Each
# run is wrapped in $CORPUS_WRAP when set (a command that makes the machine
# quiet around it), else in the exclusive lock.
wrap=${CORPUS_WRAP:-flock -x /tmp/opcost-quiet.lock}
one() { # FILE ARGS...: one run, kept gzipped, its command in the README
  local file=$1; shift
  if [ -f "$out/$file.json.gz" ]; then return; fi
  local tmp; tmp=$(mktemp --suffix .json)
  $wrap "$bin" run "$@" --no-save --no-history --json "$tmp" >/dev/null
  gzip -9 -c "$tmp" >"$out/$file.json.gz"
  rm -f "$tmp"
  echo "| $file | \`opcost run $* --no-save --no-history\` |" >>"$readme"
  echo "$file done" >&2
}
for i in 1 2 3 4 5; do one "latency-quick-$i" memory.latency --profile quick; done
for i in 1 2 3; do
  one "syscall-ipc-process-codec-text-timer-quick-$i" syscall ipc process codec text timer --profile quick
  one "memory-storage-net-cpu-crypto-quick-$i" memory storage net cpu crypto --profile quick
done
for i in $(seq 1 "$syscall_runs"); do one "syscall-quick-$i" syscall --profile quick; done
for c in 0 1; do
  one "latency-pinned-cpu$c" 'memory.latency.random/2KiB' 'memory.latency.random/4KiB' cpu.clock --profile quick --cpu "$c"
done
for i in 1 2; do one "default-aa-$i" syscall ipc process memory --profile default; done
du -sh "$out"
