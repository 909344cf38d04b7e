#!/usr/bin/env bash
# A/A test: the same opcost binary run twice back to back, then compared.
# With nothing changed, `opcost compare` should call (almost) nothing
# faster or slower; the share it does call is the false-verdict rate.
# Also reports how often a result's 95% interval holds the median of the
# other run (the interval's coverage from one run to the next) and the
# median interval half-width, and the ratio of the two runs' canary (the
# machine's own speed in each run: 1.3 means B ran in a slow phase).
#
#   scripts/aa-test.sh [-r REPEATS] [-p PROFILE] [-k DIR] [PATTERN...]
#
# Defaults: 5 repeats, quick profile, `syscall ipc.pipe process.fork_exit
# process.switch.*`. Uses a throw-away history; prints one line per repeat
# and the medians at the end. With -k DIR, each repeat's two runs and their
# comparison are kept in DIR as N-a.json, N-b.json and N-compare.json, to
# see which results were called and why.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
repeats=5 profile=quick keep=""
usage() { echo "usage: $0 [-r REPEATS] [-p PROFILE] [-k DIR] [PATTERN...]" >&2; }
parse_options "r:repeats p:profile k:keep" "$@"
if [ -n "$keep" ]; then mkdir -p "$keep"; fi
shift $((OPTIND - 1))
if [ $# -eq 0 ]; then set -- syscall ipc.pipe process.fork_exit 'process.switch.*'; fi
build_release
temp_dir work
db=$work/aa.db
printf "%-7s %8s %8s %8s %10s %10s %s\n" repeat results called rate coverage "median ±CI" "canary B/A"
rates=()
for i in $(seq 1 "$repeats"); do
  "$bin" --db "$db" run "$@" --profile "$profile" --json "$work/a.json" >/dev/null 2>&1
  "$bin" --db "$db" run "$@" --profile "$profile" --json "$work/b.json" >/dev/null 2>&1
  # The two files, without the history's noise floor: the run-level method alone.
  "$bin" --db "$db" compare "$work/a.json" "$work/b.json" --no-history --format json >"$work/c.json"
  line=$(python3 - "$work/a.json" "$work/b.json" "$work/c.json" <<'PY'
import json, sys, statistics
a, b, c = (json.load(open(p)) for p in sys.argv[1:4])
rows = c["rows"]
called = sum(r["verdict"] != "same" for r in rows)
bm = {r["id"]: r for r in b["results"]}
hits = total = 0
hw = []
for r in a["results"]:
    o = bm.get(r["id"])
    if not o:
        continue
    total += 1
    hits += r["ci_low"] <= o["median"] <= r["ci_high"]
    hw.append((r["ci_high"] - r["ci_low"]) / 2 / r["median"])
sa, sb = a.get("stability") or {}, b.get("stability") or {}
shift = sb.get("canary_ns", 0) / sa["canary_ns"] if sa.get("canary_ns") else 0
print(len(rows), called, called / max(len(rows), 1), hits / max(total, 1), statistics.median(hw), shift)
PY
)
  if [ -n "$keep" ]; then
    cp "$work/a.json" "$keep/$i-a.json"
    cp "$work/b.json" "$keep/$i-b.json"
    cp "$work/c.json" "$keep/$i-compare.json"
  fi
  read -r n k rate cov hw shift <<<"$line"
  rates+=("$rate")
  printf "%-7s %8s %8s %7.1f%% %9.1f%% %9.1f%% %10.3f\n" "$i" "$n" "$k" "$(echo "$rate*100" | bc -l)" "$(echo "$cov*100" | bc -l)" "$(echo "$hw*100" | bc -l)" "$shift"
done
# Compare with the history's noise floor too (every repeat's runs are in it).
echo
echo "last pair again, with the noise floor of the $((2 * repeats - 2)) earlier runs in the history:"
"$bin" --db "$db" compare "$work/a.json" "$work/b.json" --format json \
  | python3 -c 'import json,sys; c=json.load(sys.stdin); r=c["rows"]; k=sum(x["verdict"]!="same" for x in r); print(f"  {k} of {len(r)} called faster/slower ({100*k/max(len(r),1):.1f}%)")'
