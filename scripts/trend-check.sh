#!/usr/bin/env bash
# Checks `opcost trend` on real runs of this machine.
#
# Shift test: the first 24 runs, imported with consecutive dates; from run
# 17 on, half of the benchmarks (every other id) are made 8% slower in the
# documents (times multiplied, rates divided: medians, intervals, samples
# and rounds alike) and the kernel release is changed. Wanted: a change
# point within one run of run 17 naming the kernel change in >= 90% of the
# shifted series; a change point in <= 5% of the untouched ones.
# A/A test: all the runs, nothing changed. Wanted: <= 5% of the series
# with any change point.
#
#   scripts/trend-check.sh [-n RUNS] [-p PROFILE] [-k DIR] [-a ALPHA] [-x CSV] [PATTERN...]
#
# Defaults: 30 runs, quick profile, `syscall`. With -k DIR, the runs are
# kept in DIR (01.json, 02.json...) and those already there are used
# again, so a second call only analyses. -a passes --alpha to the trend.
# -x CSV writes the runs' medians and intervals (run, id, unit, median,
# ci_low, ci_high), unchanged, as a history for tests/fixtures/trend/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
runs=30 profile=quick keep="" alpha="" fixture=""
usage() { echo "usage: $0 [-n RUNS] [-p PROFILE] [-k DIR] [-a ALPHA] [-x CSV] [PATTERN...]" >&2; }
parse_options "n:runs p:profile k:keep a:alpha x:fixture" "$@"
shift $((OPTIND - 1))
if [ -n "$fixture" ]; then fixture=$(realpath -m "$fixture"); fi
if [ -n "$keep" ]; then keep=$(realpath -m "$keep"); fi
if [ $# -eq 0 ]; then set -- syscall; fi
if [ "$runs" -lt 24 ]; then echo "the shift test needs 24 runs or more" >&2; exit 2; fi
build_release
temp_dir work
dir=${keep:-$work/runs}
mkdir -p "$dir"
for i in $(seq -w 1 "$runs"); do
  if [ ! -s "$dir/$i.json" ]; then
    "$bin" run "$@" --profile "$profile" --no-save --json "$dir/$i.json.part" >/dev/null 2>&1
    mv "$dir/$i.json.part" "$dir/$i.json"
    echo "run $i of $runs measured" >&2
  fi
done

# The two histories: documents rewritten, then imported into throw-away databases.
python3 - "$dir" "$runs" "$work" "$fixture" <<'PY'
import csv, json, os, sys
src, n, work, fixture = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
FACTOR, FROM = 1.08, 17
FIELDS = ["median", "min", "max", "mean", "stddev", "p5", "p95", "mad", "ci_low", "ci_high"]
def scale(m, f):
    for k in FIELDS:
        if isinstance(m.get(k), (int, float)):
            m[k] *= f
    if isinstance(m.get("samples"), list):
        m["samples"] = [x * f for x in m["samples"]]
    for r in m.get("rounds") or []:
        for k in ("median", "ci_low", "ci_high"):
            if isinstance(r.get(k), (int, float)):
                r[k] *= f
        if isinstance(r.get("samples"), list):
            r["samples"] = [x * f for x in r["samples"]]
docs = [json.load(open(os.path.join(src, f"{i:02d}.json"))) for i in range(1, n + 1)]
if fixture:
    with open(fixture, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["run", "id", "unit", "median", "ci_low", "ci_high"])
        for i, d in enumerate(docs, start=1):
            for m in d["results"]:
                w.writerow([i, m["id"], m["unit"]] + [f"{m[k]:.6g}" for k in ("median", "ci_low", "ci_high")])
ids = sorted({m["id"] for d in docs for m in d["results"]})
shifted = set(ids[::2])
json.dump(sorted(shifted), open(os.path.join(work, "shifted.json"), "w"))
for kind, count in (("shift", 24), ("aa", n)):
    os.makedirs(os.path.join(work, kind))
    for i, d in enumerate(json.loads(json.dumps(docs[:count])), start=1):
        d["run"]["id"] = f"{0x7e000000 + (0x1000 if kind == 'aa' else 0) + i:08x}"
        d["run"]["started"] = f"2026-03-{i:02d}T10:00:00Z"
        d["host"]["hostname"] = "trend-check"
        if kind == "shift" and i >= FROM:
            d["host"]["kernel"]["release"] = "9.9.9-trend-check"
            for m in d["results"]:
                if m["id"] in shifted:
                    scale(m, FACTOR if m["unit"] == "ns/op" else 1 / FACTOR)
        json.dump(d, open(os.path.join(work, kind, f"{i:02d}.json"), "w"))
PY
extra=()
if [ -n "$alpha" ]; then extra=(--alpha "$alpha"); fi
for kind in shift aa; do
  if ! "$bin" --db "$work/$kind.db" import "$work/$kind"/*.json >"$work/import.log" 2>&1; then
    cat "$work/import.log" >&2
    exit 1
  fi
  "$bin" --db "$work/$kind.db" trend "${extra[@]}" --format json >"$work/$kind-trend.json"
done
python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
shifted = set(json.load(open(os.path.join(work, "shifted.json"))))
s = json.load(open(os.path.join(work, "shift-trend.json")))["series"]
hit = [x for x in s if x["id"] in shifted]
other = [x for x in s if x["id"] not in shifted]
def found(x):
    return any(abs(c["index"] - 16) <= 1 and any(e["fact"] == "kernel" for e in c["env_changes"])
               for c in x["change_points"])
n_hit = sum(found(x) for x in hit)
n_false = sum(bool(x["change_points"]) for x in other)
print(f"shift test (24 runs, 8% from run 17 in {len(hit)} of {len(s)} series):")
print(f"  shifted series with a change point at run 17 ±1 naming the kernel: {n_hit}/{len(hit)} ({100*n_hit/max(len(hit),1):.0f}%, wanted >= 90%)")
print(f"  untouched series with any change point: {n_false}/{len(other)} ({100*n_false/max(len(other),1):.1f}%, wanted <= 5%)")
for x in hit:
    if not found(x):
        print(f"    missed: {x['id']}: {[(c['index'], round(c['ratio'], 3)) for c in x['change_points']]}")
for x in other:
    if x["change_points"]:
        print(f"    false: {x['id']}: {[(c['index'], round(c['ratio'], 3)) for c in x['change_points']]}")
a = json.load(open(os.path.join(work, "aa-trend.json")))["series"]
n_aa = sum(bool(x["change_points"]) for x in a)
runs = max((x["runs"] for x in a), default=0)
print(f"A/A test ({runs} runs, nothing changed): series with any change point: {n_aa}/{len(a)} ({100*n_aa/max(len(a),1):.1f}%, wanted <= 5%)")
for x in a:
    if x["change_points"]:
        print(f"    false: {x['id']}: {[(c['index'], round(c['ratio'], 3)) for c in x['change_points']]}")
PY
