#!/usr/bin/env bash
# Compares the ICMP echo rows (`opcost run net --target`) with `ping -f`
# against the same responder: the kernel of a network namespace this
# script creates (joined by a veth pair, 10.233.77.1 here, 10.233.77.2
# there; removed on exit). Runs alternate (ping, opcost, ping, opcost...)
# so that load from other work hits both alike; medians side by side.
#
#  - `ping -f -q -c N` (iputils): replies / its total time, vs
#    net.target.icmp.rate at --max-pps 1000000 (window of 16 in flight),
#    and vs 1 / net.target.icmp.rtt (one request at a time, as ping -f
#    mostly is: it sends the next request when a reply arrives, or after
#    10 ms).
#
# Needs: root (namespaces, veth), ip (iproute2), ping (iputils-ping), jq.
# Usage: scripts/peer-icmp.sh [ROUNDS [N]]   (default 5 rounds, N = 20000)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ROUNDS=${1:-5}
N=${2:-20000}
need ip ping jq
cargo build --release --quiet
OPCOST=target/release/opcost
TMP=$(mktemp -d)
NS=opcost-icmp-peer-$$
cleanup() { ip netns del "$NS" 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
ip netns add "$NS"
ip link add ocpa$$ type veth peer name ocpb$$
ip link set ocpb$$ netns "$NS"
ip addr add 10.233.77.1/30 dev ocpa$$
ip link set ocpa$$ up
ip -n "$NS" addr add 10.233.77.2/30 dev ocpb$$
ip -n "$NS" link set ocpb$$ up
ip -n "$NS" link set lo up
FAR=10.233.77.2
ping -c 1 -W 2 "$FAR" >/dev/null

for i in $(seq 1 "$ROUNDS"); do
  # "20000 packets transmitted, 20000 received, 0% packet loss, time 1234ms"
  ping -f -q -c "$N" "$FAR" | awk -F'[ ,]+' '/packets transmitted/ {for (k=1;k<=NF;k++) {if ($k=="received") r=$(k-1); if ($k=="time") t=$(k+1)} sub("ms","",t); printf "%.0f\n", r/(t/1000)}' >>"$TMP/ping"
  "$OPCOST" run net.target --target "$FAR" --max-pps 1000000 --profile default --no-save --json "$TMP/o.json" >/dev/null 2>&1
  opcost_stat "$TMP/o.json" net.target.icmp.rate median >>"$TMP/rate"
  jq -r '.results[] | select(.id == "net.target.icmp.rtt") | 1e9 / .median' "$TMP/o.json" >>"$TMP/rtt"
  echo "round $i/$ROUNDS done" >&2
done

row() { # label peer-file opcost-file
  medians_row '%-44s %10.0f/s %10.0f/s %8.2f\n' 44 "$1" "$2" "$3" "  ping runs (replies/s)" "  opcost runs (replies/s)"
}
echo
echo "medians over $ROUNDS alternating runs against the kernel of a namespace ($FAR)"
printf '%-44s %12s %12s %8s\n' "" "ping -f" "opcost" "ratio"
row "net.target.icmp.rate (16 in flight)" "$TMP/ping" "$TMP/rate"
row "1 / net.target.icmp.rtt (one at a time)" "$TMP/ping" "$TMP/rtt"
