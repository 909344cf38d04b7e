#!/usr/bin/env bash
# Compares opcost's inotify round trips (ipc.inotify.rtt/same and /cross: a
# write to a file and its IN_MODIFY event read by the waiting process, each
# way) with a small C program doing the same (scripts/peer/inotify_pingpong.c,
# compiled with cc -O2 at run time), in alternating runs on the same machine
# (opcost, C, opcost, C...), so that other load lands on both.
#
# The C program runs pinned like opcost's two ends: the CPUs opcost's row
# used (its details' parent_cpu and peer_cpu) for the same placement, in the
# same temp directory ($TMPDIR, default /tmp).
#
# usage: scripts/peer-inotify.sh [-r ROUNDS] [-p PROFILE] [-n COUNT]
#   -r ROUNDS   alternating rounds (default 3)
#   -p PROFILE  opcost profile (default: quick)
#   -n COUNT    round trips per C run (default 20000)
#
# Prints every round, then per placement the medians, opcost/C and the
# paired ratio (the median over rounds of opcost / C within a round).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
rounds=3 profile=quick count=20000
usage() { sed -n '2,19p' "$0"; }
parse_options "r:rounds p:profile n:count h" "$@"
need cc
need jq
build_release
temp_dir work
cc -O2 -Wall -o "$work/pingpong" scripts/peer/inotify_pingpong.c
for r in $(seq 1 "$rounds"); do
  "$bin" run ipc.inotify.rtt/same ipc.inotify.rtt/cross --profile "$profile" --no-save --json "$work/o.json" >/dev/null 2>&1
  for place in same cross; do
    id=ipc.inotify.rtt/$place
    o=$(opcost_stat "$work/o.json" "$id" median)
    cpus=$(jq -r --arg id "$id" '.results[] | select(.id == $id) | "\(.details.parent_cpu) \(.details.peer_cpu)"' "$work/o.json")
    [[ -n $o && $o != null ]] || { echo "round $r: $id was not measured" >&2; continue; }
    # shellcheck disable=SC2086 # two CPU numbers
    c=$("$work/pingpong" 8 "$count" $cpus)
    echo "$o" >>"$work/opcost.$place"
    echo "$c" >>"$work/c.$place"
    ratio "$o" "$c" >>"$work/paired.$place"
    printf 'round %s %-5s (CPUs %s): opcost %.0f ns, C %.0f ns\n' "$r" "$place" "$cpus" "$o" "$c"
  done
done
printf '%-8s %12s %12s %10s %8s\n' place "C ns" "opcost ns" opcost/C paired
for place in same cross; do
  [[ -s $work/c.$place ]] || continue
  medians_row "%-8s %12.0f %12.0f %10.2f %8s\n" 8 "$place" "$work/c.$place" "$work/opcost.$place" "  C runs" "  opcost runs" "$(median <"$work/paired.$place" | awk '{printf "%.2f", $1}')"
done
