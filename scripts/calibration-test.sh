#!/usr/bin/env bash
# Calibration test: does a run's 95% interval hold what the next run reads?
# Takes N back-to-back quick runs and, over every ordered pair of runs
# (i, j), counts the results whose interval from run i holds run j's
# median: the interval's coverage from one run to the next. An interval
# that held only the variation inside one run would cover far less than
# 95%; one that is honest but useless would be wide, so the script also
# takes D runs at the default profile and reports their median interval
# half-width.
#
#   scripts/calibration-test.sh [-n RUNS] [-d DEFAULT_RUNS] [PATTERN...]
#
# Defaults: 5 quick runs, 2 default runs, the `syscall` suite. Uses a
# throw-away history, which the runs read as a host's own: from the third
# quick run on, intervals hold the spread between the runs before it
# (`between_runs`). Prints one line per run and the totals.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
runs=5
default_runs=2
usage() { echo "usage: $0 [-n RUNS] [-d DEFAULT_RUNS] [PATTERN...]" >&2; }
parse_options "n:runs d:default_runs" "$@"
shift $((OPTIND - 1))
if [ "$runs" -lt 2 ]; then echo "error: -n needs at least 2 runs" >&2; exit 2; fi
if [ $# -eq 0 ]; then set -- syscall; fi
build_release
temp_dir work
for i in $(seq 1 "$runs"); do
  "$bin" --db "$work/h.db" run "$@" --profile quick --json "$work/q$i.json" >/dev/null 2>&1
done
for i in $(seq 1 "$default_runs"); do
  "$bin" --db "$work/h.db" run "$@" --profile default --json "$work/d$i.json" >/dev/null 2>&1
done
python3 - "$work" "$runs" "$default_runs" <<'PY'
import json, os, statistics, sys
work, n, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
load = lambda name: {r["id"]: r for r in json.load(open(os.path.join(work, name)))["results"]}
quick = [load(f"q{i}.json") for i in range(1, n + 1)]
half = lambda r: (r["ci_high"] - r["ci_low"]) / 2 / r["median"]
print(f"{'quick run':<10} {'results':>8} {'covers':>8} {'median ±CI':>11}")
hits = total = 0
for i, a in enumerate(quick):
    h = t = 0
    for j, b in enumerate(quick):
        if i == j:
            continue
        for k, r in a.items():
            if k in b:
                t += 1
                h += r["ci_low"] <= b[k]["median"] <= r["ci_high"]
    hits, total = hits + h, total + t
    hw = statistics.median(half(r) for r in a.values())
    print(f"{i + 1:<10} {len(a):>8} {100 * h / max(t, 1):>7.1f}% {100 * hw:>10.2f}%")
print(f"coverage over {n} quick runs: {100 * hits / max(total, 1):.1f}% of {total} (result, other run) pairs (target: at least 80%)")
for i in range(1, d + 1):
    hw = statistics.median(half(r) for r in load(f"d{i}.json").values())
    print(f"default run {i}: median interval half-width {100 * hw:.2f}% (target: at most 5%)")
PY
