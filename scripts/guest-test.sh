#!/usr/bin/env bash
# The guest integration test (CI runs it): opcost in emulated servers it has
# never met, booted by scripts/guest.sh, reads their shape right.
#
#   1. 2s2c2t (2 sockets x 2 cores x 2 threads, a NUMA node per socket):
#      `opcost env --json` gives every CPU a core, an L3 group, a node and a
#      package; 2 nodes with their CPUs and the declared distances; the
#      classes same-cpu, same-core, same-l3 and cross-package, each with a
#      pair of its class, and no other. Then, at the quick profile,
#      ipc.pipe.rtt/8B, ipc.futex.rtt and the inotify round trip (the
#      placement classes their rows carry, `details.class`, with their CPU
#      pairs: ipc.pipe.rtt and ipc.inotify.rtt need 4, or
#      GUEST_EXPECT_CLASSES), the cache-line round trip per class, the
#      8 x 8 core-to-core matrix (`--matrix all`), the NUMA latency and
#      read matrices (2 x 2, every page where it was bound) and the read
#      bandwidth at 3 thread counts or more.
#   2. 2s2d2c2t (2 dies per socket, an L3 per die, a node per socket): two L3
#      groups per package, and the class same-node (two L3s of one node).
#   3. 2s2d2c2t-snc (the same with a node per die): 4 nodes, and the class
#      same-package (another node and L3 of the same package).
#
# Usage: scripts/guest-test.sh [-b OPCOST] [-k DIR]
#   -b OPCOST  the binary to test (default: $OPCOST_BIN, else
#              target/release/opcost under $CARGO_TARGET_DIR or the checkout)
#   -k DIR     keep each guest's results in DIR/SHAPE
#
# The time of each step is printed. It takes 40-50 s on 2 cores with the
# kernel cached (3 guests of 10-20 s), about 70 s the first time (installing
# qemu and busybox, fetching the kernel: see scripts/guest.sh), 2 minutes
# more when a boot hangs and is retried.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
root="$(cd "$(dirname "$0")/.." && pwd)"
opcost="${OPCOST_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/opcost}"
keep=""
usage() { echo "usage: $0 [-b OPCOST] [-k DIR]" >&2; }
parse_options "b:opcost k:keep h" "$@"
shift $((OPTIND - 1))
need python3
opcost_binary
work=""
temp_dir work
out=${keep:-$work}
check="$root/scripts/guest_check.py"
begin=$(date +%s)

# step NAME COMMAND...: runs COMMAND, then prints how long it took; a
# failure stops the test naming the step.
step() {
  local name=$1 t0 rc=0
  shift
  echo "== $name"
  t0=$(date +%s)
  "$@" || rc=$?
  echo "   ($name: $(($(date +%s) - t0)) s)"
  if [ "$rc" -ne 0 ]; then
    echo "guest test FAILED at: $name" >&2
    exit 1
  fi
}

# boot SHAPE COMMAND...: the commands in a guest of SHAPE, results in $out/SHAPE.
boot() {
  local shape=$1
  shift
  rm -rf "${out:?}/$shape"
  "$root/scripts/guest.sh" -s "$shape" -b "$opcost" -o "$out/$shape" "$@"
}

# pipe_classes: the placement classes of ipc.pipe.rtt's rows; fails when
# fewer than GUEST_EXPECT_CLASSES (4) are seen.
pipe_classes() {
  python3 "$check" classes "$out/2s2c2t/run.json" ipc.pipe.rtt --expect "${GUEST_EXPECT_CLASSES:-4}"
}

step "boot 2s2c2t, opcost env and the server rows at quick" boot 2s2c2t \
  'opcost env --json >env.json' \
  "opcost run 'ipc.pipe.rtt/8B' 'ipc.futex.rtt' 'ipc.inotify.rtt/' topology.c2c memory.numa 'memory.bandwidth.read/threads=' --profile quick --matrix all --json run.json"
step "2s2c2t: topology" python3 "$check" topology "$out/2s2c2t/env.json" \
  --cpus 8 --nodes 2 --l3-per-package 1 --distances '10,21;21,10' \
  --classes same-cpu,same-core,same-l3,cross-package
step "2s2c2t: ipc.pipe.rtt's classes" pipe_classes
step "2s2c2t: ipc.futex.rtt's classes" python3 "$check" classes "$out/2s2c2t/run.json" ipc.futex.rtt
step "2s2c2t: ipc.inotify.rtt's classes" python3 "$check" classes "$out/2s2c2t/run.json" ipc.inotify.rtt/ \
  --expect "${GUEST_EXPECT_CLASSES:-4}"
step "2s2c2t: matrix, cache-line classes, NUMA, bandwidth by threads" python3 "$check" server "$out/2s2c2t/run.json" \
  --cpus 8 --nodes 2 --thread-counts 3

step "boot 2s2d2c2t, opcost env" boot 2s2d2c2t 'opcost env --json >env.json'
step "2s2d2c2t: topology" python3 "$check" topology "$out/2s2d2c2t/env.json" \
  --cpus 16 --nodes 2 --l3-per-package 2 --distances '10,21;21,10' \
  --classes same-cpu,same-core,same-l3,same-node,cross-package

step "boot 2s2d2c2t-snc, opcost env" boot 2s2d2c2t-snc 'opcost env --json >env.json'
step "2s2d2c2t-snc: topology" python3 "$check" topology "$out/2s2d2c2t-snc/env.json" \
  --cpus 16 --nodes 4 --l3-per-package 2 --distances '10,11,21,21;11,10,21,21;21,21,10,11;21,21,11,10' \
  --classes same-cpu,same-core,same-l3,same-package,cross-package

echo "guest test passed in $(($(date +%s) - begin)) s"
