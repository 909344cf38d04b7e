#!/usr/bin/env bash
# Compares opcost's cache-line round trip (topology.c2c.cas/<class>) with
# core-to-core-latency (github.com/nviennot/core-to-core-latency, its
# benchmark 1: CAS on one shared line) on the same pair of CPUs, in
# alternating runs (peer, opcost, peer, opcost...).
#
# core-to-core-latency prints half the round trip (its mean over samples of
# 1000 round trips); the figure compared here is twice it, the round trip
# opcost's row measures. It is installed with `cargo install` into a cache
# directory the first time (a minute of compiling).
#
# usage: scripts/peer-topology.sh [-r ROUNDS] [-p PROFILE] [-c CLASS]
#   -r ROUNDS   alternating rounds (default 3)
#   -p PROFILE  opcost profile (default: default)
#   -c CLASS    the placement class (default: the first of two CPUs the
#               machine has, as `opcost env` lists them)
#
# Prints every round, then the medians and opcost/peer.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
rounds=3 profile=default class=""
usage() { sed -n '2,18p' "$0"; }
parse_options "r:rounds p:profile c:class h" "$@"
need python3
build_release
cache="${XDG_CACHE_HOME:-$HOME/.cache}/opcost-peers"
peer="$cache/bin/core-to-core-latency"
if [ ! -x "$peer" ]; then
  echo "installing core-to-core-latency into $cache" >&2
  cargo install -q core-to-core-latency --root "$cache"
fi
env_json=$("$bin" env --json)
read -r class a b < <(python3 -c '
import json, sys
t = json.loads(sys.argv[1])["topology"]
want = sys.argv[2]
pairs = [c for c in t["classes"] if c["class"] != "same-cpu" and (not want or c["class"] == want)]
if not pairs:
    sys.exit("no such placement class on this machine: " + (want or "two CPUs"))
c = pairs[0]
print(c["class"], c["a"], c["b"])
' "$env_json" "$class")
echo "class $class: CPUs $a and $b"
peer_v=() opcost_v=()
for r in $(seq 1 "$rounds"); do
  half=$("$peer" 1000 300 -b 1 -c "$a,$b" --csv 2>/dev/null | tr -d ' ,\n')
  p=$(python3 -c "print(2 * float('$half'))")
  o=$("$bin" run "topology.c2c.cas/$class" --profile "$profile" --no-save --no-history --json - 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["median"])')
  printf 'round %s: core-to-core-latency %.1f ns, opcost %.1f ns\n' "$r" "$p" "$o"
  peer_v+=("$p") opcost_v+=("$o")
done
pm=$(printf '%s\n' "${peer_v[@]}" | median)
om=$(printf '%s\n' "${opcost_v[@]}" | median)
python3 -c "print(f'median round trip: core-to-core-latency {$pm:.1f} ns, opcost {$om:.1f} ns, opcost/peer {$om/$pm:.2f}')"
