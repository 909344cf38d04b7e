#!/usr/bin/env bash
# Power of `opcost ab`: how many rows it calls slower when B really is
# slower by a known share, and how many it calls changed when B is A (the
# A/A false-verdict rate). Each shift is one real `opcost ab`: A runs with
# an unused variable, B with OPCOST_SLOWDOWN_PCT=SHIFT (a busy wait of that
# share of every timed batch, added to it; shift 0: another unused
# variable). Prints, per shift and try, the rows called slower, faster and
# the same, how many could have seen a 5% change, and the time ab took.
#
#   scripts/ab-power.sh [-s SHIFTS] [-n TRIES] [-p PROFILE] [-r ROUNDS] [-k DIR] [PATTERN...]
#
# SHIFTS: percentages, comma-separated (default 0,3,5,10). TRIES: ab runs
# per shift (default 1). PROFILE: ab's profile (default: default). ROUNDS:
# --rounds for ab (default: the profile's). PATTERN: default `syscall ipc
# process cpu memory.bandwidth`. -k DIR keeps each comparison's JSON there.
# Every run times benchmarks: run it on a quiet machine, one at a time.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
shifts=0,3,5,10
tries=1
profile=default
rounds=""
keep=""
usage() { echo "usage: $0 [-s SHIFTS] [-n TRIES] [-p PROFILE] [-r ROUNDS] [-k DIR] [PATTERN...]" >&2; }
parse_options "s:shifts n:tries p:profile r:rounds k:keep" "$@"
shift $((OPTIND - 1))
if [ $# -eq 0 ]; then set -- syscall ipc process cpu memory.bandwidth; fi
need python3
build_release
temp_dir work
rargs=()
if [ -n "$rounds" ]; then rargs=(--rounds "$rounds"); fi
if [ -n "$keep" ]; then mkdir -p "$keep"; fi
printf "%6s %4s %6s %8s %8s %8s %12s %8s\n" shift try rows slower faster same "could see 5%" seconds
IFS=, read -ra list <<<"$shifts"
for s in "${list[@]}"; do
  for t in $(seq 1 "$tries"); do
    if [ "$s" = 0 ]; then b_env=OPCOST_AB_SIDE=B; else b_env=OPCOST_SLOWDOWN_PCT=$s; fi
    out=$work/ab-$s-$t.json
    start=$SECONDS
    # Exit 1 is a gate or a copy that failed: neither is given here.
    "$bin" ab "$@" --profile "$profile" "${rargs[@]}" --no-save --format json \
      --a-env OPCOST_AB_SIDE=A --b-env "$b_env" >"$out" 2>"$work/err" \
      || { echo "ab failed at shift $s:" >&2; tail -5 "$work/err" >&2; exit 1; }
    took=$((SECONDS - start))
    if [ -n "$keep" ]; then cp "$out" "$keep/ab-$s-$t.json"; fi
    python3 - "$out" "$s" "$t" "$took" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
rows = c["rows"]
n = len(rows)
count = lambda v: sum(1 for r in rows if r["verdict"] == v)
see5 = sum(1 for r in rows if r.get("mde") is not None and r["mde"] <= 0.05)
pct = lambda k: f"{100 * k / n:.1f}%" if n else "-"
print(f"{sys.argv[2]:>5}% {sys.argv[3]:>4} {n:>6} {pct(count('slower')):>8} {pct(count('faster')):>8} {pct(count('same')):>8} {pct(see5):>12} {sys.argv[4]:>8}")
PY
  done
done
