#!/usr/bin/env bash
# Power of `opcost compare`: how many rows it calls slower when B really is
# slower by a known factor. Takes two real runs of the same binary (A and B,
# an A/A pair) or makes them, writes copies of B made slower by each shift
# (times multiplied, rates and throughputs divided: medians, quantiles,
# intervals, samples, rounds and per-operation figures alike), compares
# each copy with A (one run a side, no history) and prints the share of rows
# called slower, faster and the same, and how many could see a 5% change.
# Shift 0 is the A/A false-verdict rate.
#
#   scripts/compare-power.sh [-s SHIFTS] [-t THRESHOLD] A.json B.json
#   scripts/compare-power.sh [-s SHIFTS] [-t THRESHOLD] -m [-p PROFILE] [PATTERN...]
#
# SHIFTS: percentages, comma-separated (default 0,2,3,5,10,20). -t passes a
# threshold (percent) to compare. -m makes the pair first: two back-to-back
# runs of PATTERN (default `syscall ipc process cpu memory.bandwidth`) at
# PROFILE (default: default), not saved; -k DIR keeps them there.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
shifts=0,2,3,5,10,20 threshold="" make=0 profile=default keep=""
usage() { echo "usage: $0 [-s SHIFTS] [-t PCT] A.json B.json | $0 [-s SHIFTS] [-t PCT] -m [-p PROFILE] [-k DIR] [PATTERN...]" >&2; }
parse_options "s:shifts t:threshold m=make p:profile k:keep" "$@"
shift $((OPTIND - 1))
build_release
temp_dir work
if [ "$make" = 1 ]; then
  if [ $# -eq 0 ]; then set -- syscall ipc process cpu memory.bandwidth; fi
  for side in a b; do
    "$bin" run "$@" --profile "$profile" --no-save --json "$work/$side.json" >/dev/null 2>&1
    echo "run $side done" >&2
  done
  if [ -n "$keep" ]; then mkdir -p "$keep"; cp "$work/a.json" "$work/b.json" "$keep/"; fi
  a=$work/a.json
  b=$work/b.json
else
  if [ $# -ne 2 ]; then echo "give two run documents A.json B.json, or -m to make them" >&2; exit 2; fi
  a=$1
  b=$2
  for f in "$a" "$b"; do [ -r "$f" ] || { echo "$f: not readable" >&2; exit 2; }; done
fi
targs=()
if [ -n "$threshold" ]; then targs=(--threshold "$threshold"); fi
printf "%6s %6s %8s %8s %8s %10s\n" shift rows slower faster same "could see 5%"
IFS=, read -ra list <<<"$shifts"
for s in "${list[@]}"; do
  python3 - "$b" "$work/b-$s.json" "$s" <<'PY'
import json, sys
src, dst, pct = sys.argv[1], sys.argv[2], float(sys.argv[3])
k = 1 + pct / 100
d = json.load(open(src))
TIME_KEYS = ["median", "min", "max", "mean", "p5", "p95", "mad", "stddev", "ci_low", "ci_high", "overhead"]
for r in d["results"]:
    slower_time = r["unit"] == "ns/op"
    f = k if slower_time else 1 / k
    for key in TIME_KEYS:
        if isinstance(r.get(key), (int, float)):
            r[key] *= f
    r["samples"] = [x * f for x in r.get("samples", [])]
    for rd in r.get("rounds", []):
        rd["median"] *= f
    po = r.get("per_op")
    if po:
        # Per-operation figures are times whatever the unit.
        for key in ["p50", "p90", "p99", "max"]:
            if isinstance(po.get(key), (int, float)):
                po[key] *= k
d["run"]["id"] = d["run"]["id"] + "-plus" + str(pct).replace(".", "_")
json.dump(d, open(dst, "w"))
PY
  "$bin" compare "$a" "$work/b-$s.json" --no-history --format json "${targs[@]}" >"$work/c-$s.json"
  python3 - "$work/c-$s.json" "$s" <<'PY'
import json, sys
c, s = json.load(open(sys.argv[1])), sys.argv[2]
rows = c["rows"]
n = len(rows) or 1
count = lambda v: sum(r["verdict"] == v for r in rows)
see = sum(r["mde"] <= 0.05 + 1e-9 for r in rows)
print(f"{s:>5}% {len(rows):6d} {100*count('slower')/n:7.1f}% {100*count('faster')/n:7.1f}% {100*count('same')/n:7.1f}% {100*see/n:9.1f}%")
PY
done
