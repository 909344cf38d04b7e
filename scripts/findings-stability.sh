#!/usr/bin/env bash
# Findings stability: the same opcost binary run N times back to back; the
# share of findings whose words come out the same in every run.
#
#   scripts/findings-stability.sh [-k DIR] [-p PROFILE] [-w WARM] [N] [PATTERN...]
#   scripts/findings-stability.sh -r DIR [-f]  (judge documents kept with -k)
#
# Defaults: N = 3, the quick profile, `syscall ipc process codec text timer`.
# A finding's words (scripts/findings_words.py) are its area and text with
# every number blanked, and a number's scaled unit with it (`1.2 GB/s` and
# `950 MB/s` are one figure read at two scales, `31 µs` and `1.2 ms`
# likewise): what must hold is the sentence, not the figure. Prints the
# share of distinct findings present in all N runs, the contradictions (a
# sentence in one run and its opposite in another: two names swapped, or
# "faster" for "slower", "grows" for "falls"; a move to an adjacent word is
# a flip, not a contradiction), each finding that is not in every run (with
# the runs it appeared in), and how many runs were called unstable. Runs are
# not saved to any history and read none (--no-history): a first run's
# words. With -w WARM they are: WARM runs first fill a history of the
# script's own, and each judged run is saved to it too, so its words settle
# with the runs before it (src/analysis/history_words.rs);
# with -k DIR each run's JSON document is kept there as N.json (and each
# of the WARM runs as hN.json), and -r DIR judges such documents again
# without running anything; -f first gives copies of them the findings
# this source tree's rules make of their results (examples/refind.rs), to
# judge a change to the words on runs already made: where DIR holds the
# history runs hN.json too, every judged run is settled again with the
# runs before it, history first (refind --settle).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
profile=quick
keep=""
reread=""
refind=0
usage() { echo "usage: $0 [-k DIR] [-p PROFILE] [-w WARM] [N] [PATTERN...] | $0 -r DIR [-f]" >&2; }
warm=0
parse_options "p:profile k:keep r:reread f=refind w:warm" "$@"
shift $((OPTIND - 1))
n=3
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then n=$1; shift; fi
if [ "$n" -lt 2 ]; then echo "N must be at least 2" >&2; exit 2; fi
if [ $# -eq 0 ]; then set -- syscall ipc process codec text timer; fi
if [ -n "$reread" ]; then
  work=$reread
  n=$(find "$work" -maxdepth 1 -name '[0-9]*.json' | wc -l)
  if [ "$n" -lt 2 ]; then echo "$work holds fewer than 2 documents N.json" >&2; exit 2; fi
  if [ "$refind" = 1 ]; then
    kept=$(cd "$work" && pwd)
    build_release
    cargo build --release -q --example refind
    temp_dir work
    for i in $(seq 1 "$n"); do cp "$kept/$i.json" "$work/$i.json"; done
    hist=()
    for i in $(seq 1 "$(find "$kept" -maxdepth 1 -name 'h[0-9]*.json' | wc -l)"); do
      cp "$kept/h$i.json" "$work/h$i.json"
      hist+=("$work/h$i.json")
    done
    judged=()
    for i in $(seq 1 "$n"); do judged+=("$work/$i.json"); done
    if [ ${#hist[@]} -gt 0 ]; then
      echo "settling each run again with the ${#hist[@]} history runs and the runs before it" >&2
      target/release/examples/refind --settle "${hist[@]}" "${judged[@]}"
    else
      target/release/examples/refind "${judged[@]}"
    fi
  fi
else
  build_release
  temp_dir work
  # A kept set's history runs are this invocation's or none.
  if [ -n "$keep" ]; then mkdir -p "$keep" && rm -f "$keep"/h[0-9]*.json; fi
  if [ "$warm" -gt 0 ]; then
    # A history of its own: WARM runs first, then every judged run is
    # saved too, so each one's words settle with the runs before it.
    save=(--db "$work/history.db")
    for i in $(seq 1 "$warm"); do
      "$bin" run "$@" --profile "$profile" "${save[@]}" --json "$work/h$i.json" >/dev/null 2>&1
      if [ -n "$keep" ]; then cp "$work/h$i.json" "$keep/h$i.json"; fi
      echo "history run $i of $warm done" >&2
    done
  else
    save=(--no-save --no-history)
  fi
  for i in $(seq 1 "$n"); do
    "$bin" run "$@" --profile "$profile" "${save[@]}" --json "$work/$i.json" >/dev/null 2>&1
    if [ -n "$keep" ]; then cp "$work/$i.json" "$keep/$i.json"; fi
    echo "run $i of $n done" >&2
  done
fi
python3 - "$work" "$n" "$(dirname "$0")" <<'PY'
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, sys.argv[3])
from findings_words import words, contradictions
runs, unstable = [], 0
for i in range(1, n + 1):
    d = json.load(open(f"{work}/{i}.json"))
    runs.append({words(f["area"], f["text"]) for f in d.get("findings", [])})
    st = d.get("stability") or {}
    if st.get("verdict") == "unstable" or (st.get("verdict") is None and st.get("stable") is False):
        unstable += 1
every = set.intersection(*runs)
union = set.union(*runs)
share = len(every) / len(union) if union else 1.0
print(f"findings with the same words in all {n} runs: {len(every)} of {len(union)} ({100 * share:.1f}%)")
opposed = contradictions(runs)
print(f"contradictions (a sentence and its opposite in different runs): {len(opposed)}")
for a, b in opposed:
    print(f"  {a}\n    vs {b}")
print(f"runs called unstable: {unstable} of {n}")
diff = sorted(union - every)
if diff:
    print("not in every run (runs it appeared in):")
    for w in diff:
        seen = ",".join(str(i + 1) for i, r in enumerate(runs) if w in r)
        print(f"  [{seen}] {w}")
PY
