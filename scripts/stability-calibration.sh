#!/usr/bin/env bash
# Calibrates the stability verdict against the A/A test: pairs of runs of
# the same binary, each run under the same kind of load, compared with
# `opcost compare --no-history`. A pair's A/A held when at most 5% of its
# results were called faster or slower. Prints one line per pair: the
# false-verdict rate and each run's verdict and the figures it rests on.
# The tables (verdict x A/A held or not) come from the kept pairs:
# `scripts/stability-table.py DIR`.
#
#   scripts/stability-calibration.sh [-r PAIRS] [-p PROFILE] [-l LOAD] [-k DIR] [PATTERN...]
#
# LOAD (default none) is started with each run and stopped when it ends:
#   none     nothing
#   cpu      stress-ng --cpu 2, 3 s on / 3 s off (shares the CPUs only)
#   stream   stress-ng --stream 1, 4 s on / 4 s off (memory bandwidth)
#   cache    stress-ng --cache 2, 4 s on / 4 s off (cache thrashing)
#   ramp     nothing for the first 4 s, then --stream 1, from 9 s --stream 2
#            (a load whose intensity grows through the run)
#   step     --cache 2 --stream 1 from a random moment of the run to its end
#   random   stream or cache, on and off for random 1-8 s stretches
# Defaults: 10 pairs, quick profile, `syscall ipc.pipe memory.bandwidth
# process.fork_exit`. With -k DIR the runs and comparisons are kept as
# DIR/LOAD-N-{a,b,compare}.json. Needs stress-ng for every load but none.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
pairs=10
profile=quick
load=none
keep=""
usage() { echo "usage: $0 [-r PAIRS] [-p PROFILE] [-l LOAD] [-k DIR] [PATTERN...]" >&2; }
parse_options "r:pairs p:profile l:load k:keep" "$@"
shift $((OPTIND - 1))
if [ $# -eq 0 ]; then set -- syscall ipc.pipe memory.bandwidth process.fork_exit; fi
case $load in
  none | cpu | stream | cache | ramp | step | random) ;;
  *) echo "error: unknown load '$load'" >&2; exit 2 ;;
esac
if [ "$load" != none ]; then
  command -v stress-ng >/dev/null || { echo "error: stress-ng is not installed (apt-get install stress-ng)" >&2; exit 1; }
fi
if [ -n "$keep" ]; then mkdir -p "$keep"; fi
build_release
work=$(mktemp -d)
load_pid=""
stop_load() {
  if [ -n "$load_pid" ]; then
    kill -- "-$load_pid" 2>/dev/null || true
    wait "$load_pid" 2>/dev/null || true
    load_pid=""
  fi
}
cleanup() { stop_load; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# The load's script, run in a process group of its own so that it stops
# whole (`timeout --foreground` keeps stress-ng in that group).
load_script() {
  local phases='on=$1; off=$2; shift 2; while :; do timeout --foreground "$on" stress-ng "$@" --quiet || true; sleep "$off"; done'
  case $1 in
    cpu) echo "$phases" ;;
    stream) echo "$phases" ;;
    cache) echo "$phases" ;;
    ramp) echo 'sleep 4; timeout --foreground 5 stress-ng --stream 1 --quiet || true; exec stress-ng --stream 2 --quiet' ;;
    step) echo 'sleep "$((RANDOM % 12))"; exec stress-ng --cache 2 --stream 1 --quiet' ;;
    random) echo 'while :; do s=$((RANDOM % 2)); on=$((1 + RANDOM % 8)); off=$((1 + RANDOM % 8)); if [ "$s" = 0 ]; then timeout --foreground "$on" stress-ng --stream 1 --quiet || true; else timeout --foreground "$on" stress-ng --cache 2 --quiet || true; fi; sleep "$off"; done' ;;
  esac
}
load_args() {
  case $1 in
    cpu) echo "3 3 --cpu 2" ;;
    stream) echo "4 4 --stream 1" ;;
    cache) echo "4 4 --cache 2" ;;
    *) echo "" ;;
  esac
}
start_load() {
  [ "$load" = none ] && return
  # shellcheck disable=SC2046 # the arguments are words on purpose
  setsid bash -c "$(load_script "$load")" load $(load_args "$load") >/dev/null 2>&1 &
  load_pid=$!
}
measure() {
  start_load
  "$bin" --db "$work/h.db" run "$@" --profile "$profile" --json "$out" >/dev/null 2>&1
  stop_load
}

echo "# load=$load profile=$profile patterns: $*"
for i in $(seq 1 "$pairs"); do
  out=$work/a.json measure "$@"
  out=$work/b.json measure "$@"
  "$bin" --db "$work/h.db" compare "$work/a.json" "$work/b.json" --no-history --format json >"$work/c.json"
  if [ -n "$keep" ]; then
    for f in a b; do cp "$work/$f.json" "$keep/$load-$i-$f.json"; done
    cp "$work/c.json" "$keep/$load-$i-compare.json"
  fi
  python3 - "$work/a.json" "$work/b.json" "$work/c.json" "$load" "$i" <<'PY'
import json, sys
a, b, c = (json.load(open(p)) for p in sys.argv[1:4])
rows = c["rows"]
called = sum(r["verdict"] != "same" for r in rows)
rate = called / max(len(rows), 1)
def desc(d):
    s = d.get("stability") or {}
    v = s.get("verdict") or ("steady" if s.get("stable") else "unstable")
    o = s.get("others_share")
    return (f"{v:<8} spread={s.get('spread', 0) * 100:4.1f}% slow={s.get('slow_rounds')}/{s.get('rounds')} "
            f"left={s.get('slow_rounds', 0) - s.get('remeasured', 0) - s.get('set_aside', 0)} "
            f"drift={s.get('drift', 0) * 100:+.1f}% others={'-' if o is None else f'{o * 100:.0f}%'}")
print(f"{sys.argv[4]:<7} {sys.argv[5]:>3} rate={rate * 100:5.1f}% {'held' if rate <= 0.05 else 'BROKE'} | A {desc(a)} | B {desc(b)}", flush=True)
PY
done
