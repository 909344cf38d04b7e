#!/usr/bin/env bash
# A kernel-setting change, made for real: the same emulated guest booted
# with the default command line and then with `mitigations=off` (page-table
# isolation off: every system call of the emulated Skylake-Server gets
# cheaper, user-space work does not), N quick runs each, one history.
# Checked (issue "trend on real noise", target 3):
#   - `opcost trend` finds a change point at the first mitigations=off run
#     in the rows that enter the kernel, and names the command line change;
#   - it finds none in the pure user-space rows (a function call);
#   - `opcost compare` of the default runs against the mitigations=off runs
#     (a side of several runs: under emulation one run's interval spans
#     orders of magnitude) calls the system calls faster and does not say
#     the machine's speed changed (the stability canary is user-space work
#     only); the function call's row is printed beside them.
#
#   scripts/kernel-change-check.sh [-n RUNS] [-b OPCOST] [-k DIR]
#
# Defaults: 6 runs a side (the fewest the trend's rank test can split).
# With -k DIR the guests' results are kept there, and a side whose runs are
# already there is not booted again (the check is then only analysed).
# Timings inside the guest are an emulator's: the check is about words and
# where they point, not about the figures. It holds an exclusive lock on
# /tmp/opcost-quiet.lock while the guests run, so the emulator's speed (the
# canary's) does not change with other work on the machine.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
root="$(cd "$(dirname "$0")/.." && pwd)"
runs=6
opcost="${OPCOST_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/opcost}"
keep=""
usage() { echo "usage: $0 [-n RUNS] [-b OPCOST] [-k DIR]" >&2; }
parse_options "n:runs b:opcost k:keep h" "$@"
shift $((OPTIND - 1))
opcost=$(realpath -m "$opcost")
[ -x "$opcost" ] || { echo "error: no opcost binary at $opcost" >&2; exit 2; }
work=""
temp_dir work
out=${keep:-$work}
rows="syscall.getppid.raw syscall.getpid syscall.function_call"
cmds=()
for i in $(seq 1 "$runs"); do
  cmds+=("opcost run $rows --profile quick --json run-$i.json >/dev/null")
done
for side in default off; do
  append=""
  if [ "$side" = off ]; then append="mitigations=off"; fi
  if [ -s "$out/$side/run-$runs.json" ]; then continue; fi
  echo "== guest, command line: ${append:-(default)}, $runs runs"
  t0=$(date +%s)
  rm -rf "${out:?}/$side"
  GUEST_APPEND="$append" flock -x /tmp/opcost-quiet.lock \
    "$root/scripts/guest.sh" -s 2s2c2t -b "$opcost" -o "$out/$side" "${cmds[@]}"
  echo "   ($(($(date +%s) - t0)) s)"
done
db="$out/history.db"
rm -f "$db"
"$opcost" --db "$db" import "$out/default" "$out/off" >/dev/null
trend=$("$opcost" --db "$db" trend syscall 2>&1)
echo "$trend"
fail() { echo "kernel-change check FAILED: $*" >&2; exit 1; }
# The syscall rows: a change point naming the command line.
echo "$trend" | grep -q "syscall.getppid.raw" || fail "no change point in syscall.getppid.raw"
echo "$trend" | grep -q "mitigations=off" || fail "the change is not named by the command line"
if echo "$trend" | grep -A2 "syscall.function_call" | grep -qi "change point\|faster\|slower"; then
  fail "a change point in the user-space function call"
fi
side_runs() { find "$1" -name 'run-*.json' | sort -V | paste -sd, -; }
cmp=$("$opcost" --db "$db" compare "$(side_runs "$out/default")" "$(side_runs "$out/off")" 2>&1)
echo "$cmp" | grep -E "syscall\.|machine speed" || true
echo "$cmp" | grep "syscall.getppid.raw" | grep -q "faster" || fail "compare does not call the raw system call faster"
if echo "$cmp" | grep -q "machine speed changed"; then
  fail "compare blames the machine's speed for the kernel's"
fi
echo "kernel-change check passed"
