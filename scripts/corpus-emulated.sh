#!/usr/bin/env bash
# Make an emulated machine's sets for the test corpus (tests/fixtures/corpus/),
# beside the real machines' (scripts/corpus-sets.sh): their timings are the
# emulator's and mean nothing, so `cargo test` holds them to their structure
# and to the shape the emulator was given (tests/corpus/emulated.rs reads it
# from the README's `Shape:` line, written here from the shape asked for,
# not from what opcost saw).
#
#   scripts/corpus-emulated.sh -s SHAPE [-b OPCOST] [-n NAME]
#       a qemu-system guest of SHAPE (scripts/guest.sh: 2s2c2t, 2s2d2c2t,
#       2s2d2c2t-snc): `opcost env --json`, a quick run of topology, the
#       placement rows of ipc and memory.numa (topology-quick), and for
#       2s2c2t the core-to-core matrix of every CPU (matrix-quick).
#       NAME defaults to emulated-SHAPE-DATE.
#   scripts/corpus-emulated.sh -a [-b OPCOST] [-n NAME]
#       opcost's aarch64 build (default: the debug build of
#       scripts/aarch64-test.sh under target/) under qemu-aarch64 user
#       emulation: `opcost env --json` and a quick run of `syscall cpu
#       memory.latency topology`, every round in one process. NAME defaults
#       to qemu-aarch64-DATE.
#
# Both run under `nice -n 19` and need no quiet machine (their timings are
# not used).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
root="$(cd "$(dirname "$0")/.." && pwd)"
shape="" arm="" opcost="" name=""
usage() { echo "usage: $0 -s SHAPE | -a  [-b OPCOST] [-n NAME]" >&2; }
parse_options "s:shape a=arm b:opcost n:name h" "$@"
shift $((OPTIND - 1))
if [ $# -ne 0 ] || { [ -z "$shape" ] && [ -z "$arm" ]; } || { [ -n "$shape" ] && [ -n "$arm" ]; }; then
  usage
  exit 2
fi
day=$(date +%F)
temp_dir work
export XDG_DATA_HOME="$work/data"

# keep FILE SRC: SRC gzipped as the set's FILE.json.gz.
keep() { gzip -9 -c "$2" >"$out/$1.json.gz"; }

if [ -n "$shape" ]; then
  # The shape as the emulator is given it (scripts/guest.sh), in the words
  # of the machine description.
  case $shape in
    2s2c2t) stated="cpus=8 sockets=2 threads_per_core=2 numa_nodes=2 classes=same-cpu,same-core,same-l3,cross-package"
      what="2 sockets × 2 cores × 2 threads (8 CPUs), a NUMA node per socket" ;;
    2s2d2c2t) stated="cpus=16 sockets=2 threads_per_core=2 numa_nodes=2 classes=same-cpu,same-core,same-l3,same-node,cross-package"
      what="2 sockets × 2 dies × 2 cores × 2 threads (16 CPUs, an L3 per die), a NUMA node per socket" ;;
    2s2d2c2t-snc) stated="cpus=16 sockets=2 threads_per_core=2 numa_nodes=4 classes=same-cpu,same-core,same-l3,same-package,cross-package"
      what="2 sockets × 2 dies × 2 cores × 2 threads (16 CPUs, an L3 per die), a NUMA node per die (4 nodes)" ;;
    *) echo "unknown shape $shape (2s2c2t, 2s2d2c2t or 2s2d2c2t-snc)" >&2; exit 2 ;;
  esac
  opcost=${opcost:-$root/target/release/opcost}
  name=${name:-emulated-$shape-$day}
  out="$root/tests/fixtures/corpus/$name"
  mkdir -p "$out"
  run="opcost run topology ipc.pipe.rtt/8B ipc.futex.rtt ipc.inotify.rtt/ memory.numa --profile quick --json topology-quick.json"
  cmds=('opcost env --json >env.json' "$run")
  # The matrix in a run of its own: a vCPU the host leaves unscheduled for
  # 5 s stops it, and with it the run.
  if [ "$shape" = 2s2c2t ]; then
    cmds+=("opcost run topology.c2c --profile quick --matrix all --json matrix-quick.json")
  fi
  nice -n 19 "$root/scripts/guest.sh" -s "$shape" -b "$opcost" -o "$work/guest" -t 3000 "${cmds[@]}" || true
  for f in env topology-quick matrix-quick; do
    if [ -s "$work/guest/$f.json" ]; then keep "$f" "$work/guest/$f.json"; fi
  done
  [ -f "$out/env.json.gz" ] && [ -f "$out/topology-quick.json.gz" ] || { echo "the guest gave no results (see above)" >&2; exit 1; }
  qemu=$(qemu-system-x86_64 --version | head -n 1 | awk '{print $4}')
  {
    echo "# $name"
    echo
    echo "A qemu-system-x86_64 $qemu guest under software emulation (TCG, no KVM), booted by"
    echo "\`scripts/guest.sh -s $shape\`: $what; $day."
    echo "Binary: $($opcost --version)."
    echo "Made by \`scripts/corpus-emulated.sh -s $shape\` under \`nice -n 19\`: the timings are the"
    echo "emulator's and mean nothing; the shape is what these files are for."
    echo
    echo "Shape: arch=x86_64 $stated"
    echo
    echo "| file | command (in the guest; its history a throw-away one) |"
    echo "|---|---|"
    echo "| env | \`opcost env --json\` |"
    echo "| topology-quick | \`${run% --json *}\` |"
    if [ -f "$out/matrix-quick.json.gz" ]; then
      echo "| matrix-quick | \`opcost run topology.c2c --profile quick --matrix all\` |"
    fi
  } >"$out/README.md"
else
  need qemu-aarch64
  opcost=${opcost:-$root/target/aarch64-unknown-linux-gnu/debug/opcost}
  [ -x "$opcost" ] || { echo "no aarch64 build at $opcost (scripts/aarch64-test.sh builds it; or -b)" >&2; exit 2; }
  name=${name:-qemu-aarch64-$day}
  out="$root/tests/fixtures/corpus/$name"
  mkdir -p "$out"
  nice -n 19 qemu-aarch64 "$opcost" env --json >"$work/env.json"
  keep env "$work/env.json"
  patterns="syscall cpu memory.latency topology"
  # shellcheck disable=SC2086 # the patterns are words
  nice -n 19 qemu-aarch64 "$opcost" run $patterns --profile quick --one-process --no-save \
    --json "$work/quick.json" >/dev/null
  keep syscall-cpu-latency-topology-quick "$work/quick.json"
  cpus=$(nproc)
  {
    echo "# $name"
    echo
    echo "opcost's aarch64 build ($(qemu-aarch64 "$opcost" --version)) under qemu-aarch64"
    echo "$(qemu-aarch64 --version | head -n 1 | awk '{print $3}') user emulation on this $(uname -m) machine ($cpus CPUs, Linux $(uname -r)), $day. Made by"
    echo "\`scripts/corpus-emulated.sh -a\` under \`nice -n 19\`, every round in one process (qemu-user"
    echo "cannot start the round workers): the timings are the emulator's and mean nothing."
    echo
    echo "Shape: arch=aarch64 cpus=$cpus"
    echo
    echo "| file | command (\`qemu-aarch64 opcost …\`) |"
    echo "|---|---|"
    echo "| env | \`opcost env --json\` |"
    echo "| syscall-cpu-latency-topology-quick | \`opcost run $patterns --profile quick --one-process --no-save\` |"
  } >"$out/README.md"
fi
du -sh "$out"
