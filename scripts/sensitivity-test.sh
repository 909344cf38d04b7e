#!/usr/bin/env bash
# Sensitivity test, the A/A test's twin: a run taken while `stress-ng --cpu`
# loads every CPU, compared with a run on the same machine without it: the
# share of results `opcost compare` calls slower is the sensitivity to what
# the load changed (the A/A test gives the false-verdict rate).
#
#   scripts/sensitivity-test.sh [-r REPEATS] [-p PROFILE] [-l STRESSORS] [PATTERN...]
#
# Defaults: 3 repeats (quiet and loaded runs alternating), quick profile,
# `cpu syscall`, stressors `--cpu $(nproc)`. Needs stress-ng.
#
# What to expect: the cpu and syscall suites time only batches the
# scheduler did not interrupt, so a load that merely shares the CPUs
# (`--cpu`) leaves their per-operation costs where they were, and the
# test reads ~0% unless the CPUs share cores with the load (SMT); the
# runs record other programs' share of the CPUs, and `compare` says which
# side ran on a busier machine (columns "others A/B", "busier"). A load
# that competes for what an operation uses is seen: e.g.
# `-l "--memcpy 1" memory.bandwidth.copy` (memory bandwidth). Uses a throw-away history; the load is
# stopped when its run ends, also on Ctrl-C.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
repeats=3 profile=quick stressors=""
usage() { echo "usage: $0 [-r REPEATS] [-p PROFILE] [-l STRESSORS] [PATTERN...]" >&2; }
parse_options "r:repeats p:profile l:stressors" "$@"
shift $((OPTIND - 1))
if [ $# -eq 0 ]; then set -- cpu syscall; fi
command -v stress-ng >/dev/null || { echo "error: stress-ng is not installed (apt-get install stress-ng)" >&2; exit 1; }
build_release
work=$(mktemp -d)
load_pid=""
cleanup() {
  if [ -n "$load_pid" ]; then kill "$load_pid" 2>/dev/null || true; wait "$load_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
db=$work/s.db
if [ -z "$stressors" ]; then stressors="--cpu $(nproc)"; fi
printf "%-7s %8s %8s %8s %8s %10s %8s\n" repeat results slower faster "slower %" "others A/B" "busier"
for i in $(seq 1 "$repeats"); do
  "$bin" --db "$db" run "$@" --profile "$profile" --label quiet --json "$work/quiet.json" >/dev/null 2>&1
  # shellcheck disable=SC2086 # the stressors are words on purpose
  stress-ng $stressors --timeout 600s --quiet &
  load_pid=$!
  sleep 1
  "$bin" --db "$db" run "$@" --profile "$profile" --label loaded --json "$work/loaded.json" >/dev/null 2>&1
  kill "$load_pid"; wait "$load_pid" 2>/dev/null || true
  load_pid=""
  "$bin" --db "$db" compare "$work/quiet.json" "$work/loaded.json" --no-history --format json >"$work/c.json"
  python3 - "$work/c.json" "$i" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
rows = c["rows"]
slower = sum(r["verdict"] == "slower" for r in rows)
faster = sum(r["verdict"] == "faster" for r in rows)
o = c.get("others_share")
others = f"{o[0] * 100:.0f}%/{o[1] * 100:.0f}%" if o else "-"
busier = "B" if o and o[1] - o[0] >= 0.25 else ("A" if o and o[0] - o[1] >= 0.25 else "no")
print(f"{sys.argv[2]:<7} {len(rows):>8} {slower:>8} {faster:>8} {100 * slower / max(len(rows), 1):>7.1f}% {others:>10} {busier:>8}")
PY
done
