#!/usr/bin/env bash
# Compares opcost's net figures on loopback with iperf3 and sockperf, in
# the same sitting: each peer run is followed at once by the opcost run of
# the same case, several rounds, medians side by side, and the targets
# judged on paired ratios (the median over rounds of opcost / peer).
#
#   TCP one stream   iperf3 -c 127.0.0.1 (bytes received / s)          vs net.loopback.tcp.stream.one
#   UDP 64 B         iperf3 -c 127.0.0.1 -u -b 0 -l 64                 vs net.loopback.udp.plain/64B
#                    (datagrams received / s: sent minus lost; iperf3
#                    sends and receives one datagram per call, as
#                    opcost's plain mode does)
#   TCP 64 B RR      sockperf ping-pong --tcp -m 64 (p50, x2: sockperf
#                    reports half a round trip), when installed         vs net.loopback.tcp.rr/64B (p50)
#
# Targets: TCP within 15% of iperf3; UDP 64 B at least iperf3's rate.
#
# Usage: scripts/peer-net.sh [ROUNDS]   (default 5)
#   OPCOST=path   the binary (default target/release/opcost, built if missing)
#   PROFILE=p     opcost's profile (default: default)
#   RAW=file      keep every figure (round, what, tool, value)
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${1:-5}
OPCOST=${OPCOST:-target/release/opcost}
PROFILE=${PROFILE:-default}
PORT=${PORT:-5301}
SPORT=${SPORT:-11111}
for tool in iperf3 jq; do
    command -v "$tool" >/dev/null || { echo "peer-net: $tool is not installed" >&2; exit 1; }
done
HAVE_SOCKPERF=$(command -v sockperf >/dev/null && echo 1 || echo 0)
[ -x "$OPCOST" ] || cargo build --release --quiet

work=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
iperf3 -s -B 127.0.0.1 -p "$PORT" >/dev/null 2>&1 &
PIDS+=($!)
if [ "$HAVE_SOCKPERF" = 1 ]; then
    sockperf server -i 127.0.0.1 -p "$SPORT" --tcp >/dev/null 2>&1 &
    PIDS+=($!)
fi
sleep 0.5

rows=${RAW:-$work/rows.tsv} # round <TAB> what <TAB> tool <TAB> value
: >"$rows"
add() { printf '%s\t%s\t%s\t%s\n' "$round" "$1" "$2" "$3" >>"$rows"; }

opcost_json() { # ids...
    "$OPCOST" run "$@" --profile "$PROFILE" --no-save --format json 2>/dev/null
}

for round in $(seq 1 "$ROUNDS"); do
    v=$(iperf3 -c 127.0.0.1 -p "$PORT" -t 2 -J | jq '.end.sum_received.bits_per_second / 8')
    add tcp_stream iperf3 "$v"
    v=$(opcost_json net.loopback.tcp.stream.one | jq '.results[0].median')
    add tcp_stream opcost "$v"

    v=$(iperf3 -c 127.0.0.1 -p "$PORT" -u -b 0 -l 64 -t 2 -J |
        jq '.end.sum | (.packets - .lost_packets) / .seconds')
    add udp64 iperf3 "$v"
    v=$(opcost_json net.loopback.udp.plain/64B | jq '.results[0].median')
    add udp64 opcost "$v"

    if [ "$HAVE_SOCKPERF" = 1 ]; then
        v=$(sockperf ping-pong -i 127.0.0.1 -p "$SPORT" --tcp -m 64 -t 2 2>&1 |
            awk '/percentile 50.000/ { printf "%.0f\n", $NF * 2000 }')
        add rr64 sockperf "$v"
        v=$(opcost_json net.loopback.tcp.rr/64B | jq '.results[0].per_op.p50')
        add rr64 opcost "$v"
    fi
done

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
val() { awk -F'\t' -v w="$1" -v t="$2" '$2 == w && $3 == t { print $4 }' "$rows" | median; }
paired() { # what peer: median over rounds of opcost / peer
    awk -F'\t' -v w="$1" -v p="$2" '$2 == w { v[$1 "," $3] = $4; r[$1] = 1 }
        END { for (k in r) if (v[k "," p] > 0) print v[k ",opcost"] / v[k "," p] }' "$rows" | median
}

div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f\n", a / b }'; }
echo "net peers on loopback, $ROUNDS rounds, opcost profile $PROFILE, load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-34s %16s %16s %10s  %s\n' case peer opcost ratio target
t=$(val tcp_stream iperf3); o=$(val tcp_stream opcost); r=$(paired tcp_stream iperf3)
printf '%-34s %13.3f GB/s %13.3f GB/s %9.2fx  %s\n' "TCP one stream (iperf3)" "$(div "$t" 1e9)" "$(div "$o" 1e9)" "$r" \
    "$(awk -v r="$r" 'BEGIN { print (r >= 0.85 && r <= 1.15) ? "within 15%: met" : "outside 15%: NOT met" }')"
t=$(val udp64 iperf3); o=$(val udp64 opcost); r=$(paired udp64 iperf3)
printf '%-34s %11.1f kpkt/s %11.1f kpkt/s %9.2fx  %s\n' "UDP 64 B received (iperf3)" "$(div "$t" 1e3)" "$(div "$o" 1e3)" "$r" \
    "$(awk -v r="$r" 'BEGIN { print (r >= 1.0) ? "at least the peer: met" : "below the peer: NOT met" }')"
if [ "$HAVE_SOCKPERF" = 1 ]; then
    t=$(val rr64 sockperf); o=$(val rr64 opcost); r=$(paired rr64 sockperf)
    printf '%-34s %14.1f us %14.1f us %9.2fx  %s\n' "TCP 64 B round trip p50 (sockperf)" "$(div "$t" 1e3)" "$(div "$o" 1e3)" "$r" "(lower is faster)"
fi
