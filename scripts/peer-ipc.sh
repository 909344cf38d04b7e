#!/usr/bin/env bash
# Compares opcost's IPC figures with classic tools on this machine, in the
# same sitting, alternating (peer, opcost, peer, opcost...) so that a busy
# moment of the machine hits both, and prints the medians side by side.
#
#   pipe throughput   dd if=/dev/zero bs=S | dd of=/dev/null bs=S     vs ipc.{pipe,fifo,splice}.tput/S
#                     stress-ng --pipe --pipe-data-size S (S <= 4 KiB)
#   pipe round trip   perf bench sched pipe                           vs ipc.{pipe,unix_stream}.rtt/8B
#   TCP throughput    iperf3 -c 127.0.0.1 -l S (server on 127.0.0.1)  vs ipc.tcp.tput/S
#
# Peers run both pinned like opcost's two ends (same: both on CPU A; cross:
# CPU A and CPU B) and unpinned ("any", the command as people type it).
#
# Usage: scripts/peer-ipc.sh [ROUNDS]   (default 5)
#   OPCOST=path   the binary (default target/release/opcost, built if missing)
#   RAW=file      also keep every figure of every round (what, tool, value)
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${1:-5}
OPCOST=${OPCOST:-target/release/opcost}
PORT=${PORT:-5299}
for tool in dd stress-ng perf iperf3 jq taskset; do
    command -v "$tool" >/dev/null || { echo "peer-ipc: $tool is not installed" >&2; exit 1; }
done
[ -x "$OPCOST" ] || cargo build --release --quiet

# The two CPUs opcost would choose: the first two this process may use.
mapfile -t CPUS < <(taskset -cp $$ | sed 's/.*: //' | tr ',' '\n' |
    awk -F- '{ if (NF == 2) for (i = $1; i <= $2; i++) print i; else print $1 }' | head -2)
A=${CPUS[0]}
B=${CPUS[1]:-}

work=$(mktemp -d)
IPERF_PID=
cleanup() {
    if [ -n "$IPERF_PID" ]; then kill "$IPERF_PID" 2>/dev/null || true; wait "$IPERF_PID" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
iperf3 -s -B 127.0.0.1 -p "$PORT" >/dev/null 2>&1 &
IPERF_PID=$!
sleep 0.5

rows="$work/rows.tsv"   # what <TAB> tool <TAB> value (B/s or ns)
add() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$rows"; }

# dd pair: bytes/s as the reading dd reports them (bytes / its elapsed time).
dd_pair() { # bs count left-cpu right-cpu
    local l=() r=()
    [ "$3" != any ] && l=(taskset -c "$3")
    [ "$4" != any ] && r=(taskset -c "$4")
    "${l[@]}" dd if=/dev/zero bs="$1" count="$2" 2>/dev/null |
        "${r[@]}" dd of=/dev/null bs="$1" 2>&1 |
        awk '/copied/ { for (i = 1; i <= NF; i++) if ($i == "s,") t = $(i - 1); printf "%.0f\n", $1 / t }'
}

# stress-ng --pipe: bogo ops/s (one op = one write of the data size) times the size.
# (Its own "MB per sec" line counts 512 B per op whatever the size.)
stress_pipe() { # size pin(any|cpu)
    local pin=()
    [ "$2" != any ] && pin=(--taskset "$2")
    stress-ng --pipe 1 --pipe-data-size "$1" "${pin[@]}" -t 2s --metrics 2>&1 |
        awk -v s="$1" '$4 == "pipe" && $5 ~ /^[0-9]+$/ { printf "%.0f\n", $9 * s }'
}

# perf bench sched pipe: ns per round trip (4-byte messages).
perf_pipe() { # pin(any|cpu)
    local pin=()
    [ "$1" != any ] && pin=(taskset -c "$1")
    "${pin[@]}" perf bench sched pipe -l 100000 2>&1 | awk '/usecs\/op/ { printf "%.0f\n", $1 * 1000 }'
}

# iperf3 client on 127.0.0.1: bytes/s received; -A c,s pins client and server.
iperf() { # len affinity(any|c,s)
    local aff=()
    [ "$2" != any ] && aff=(-A "$2")
    iperf3 -c 127.0.0.1 -p "$PORT" -t 2 -l "$1" "${aff[@]}" -J | jq '.end.sum_received.bits_per_second / 8 | floor'
}

# opcost: the medians of the selected benchmarks, default profile.
opcost_run() {
    local json="$work/run.json"
    "$OPCOST" run "$@" --profile default --no-save --json "$json" >/dev/null 2>&1
    jq -r '.results[] | [.id, (.median | floor)] | @tsv' "$json" |
        while IFS=$'\t' read -r id v; do add "${id#ipc.}" opcost "$v"; done
}

declare -A COUNT=([64]=1000000 [512]=1000000 [4K]=256000 [64K]=32000 [1M]=2000)
declare -A LABEL=([64]=64B [512]=512B [4K]=4KiB [64K]=64KiB [1M]=1MiB)
places=("same $A $A")
[ -n "$B" ] && places+=("cross $A $B")
places+=("any any any")

for round in $(seq 1 "$ROUNDS"); do
    echo "round $round/$ROUNDS" >&2
    for s in 64 512 4K 64K 1M; do
        for p in "${places[@]}"; do
            read -r name l r <<<"$p"
            add "pipe.tput/${LABEL[$s]}/$name" "dd|dd" "$(dd_pair "$s" "${COUNT[$s]}" "$l" "$r")"
        done
        case $s in 64 | 512 | 4K)
            add "pipe.tput/${LABEL[$s]}/same" "stress-ng" "$(stress_pipe "${s/K/096}" "$A")"
            add "pipe.tput/${LABEL[$s]}/any" "stress-ng" "$(stress_pipe "${s/K/096}" any)"
            ;;
        esac
    done
    opcost_run ipc.pipe.tput ipc.fifo.tput ipc.splice.tput

    add "pipe.rtt/8B/same" "perf-sched-pipe" "$(perf_pipe "$A")"
    add "pipe.rtt/8B/any" "perf-sched-pipe" "$(perf_pipe any)"
    opcost_run ipc.pipe.rtt/8B ipc.unix_stream.rtt/8B

    for len in 64K 1M; do
        add "tcp.tput/${LABEL[$len]}/same" iperf3 "$(iperf "$len" "$A,$A")"
        [ -n "$B" ] && add "tcp.tput/${LABEL[$len]}/cross" iperf3 "$(iperf "$len" "$A,$B")"
        add "tcp.tput/${LABEL[$len]}/any" iperf3 "$(iperf "$len" any)"
    done
    opcost_run ipc.tcp.tput/64KiB ipc.tcp.tput/1MiB
done

# Medians, peers and opcost side by side.
medians="$work/medians.tsv"
awk -F'\t' '
    { k = $1 "\t" $2; v[k] = v[k] " " $3; n[k]++ }
    END {
        for (k in v) {
            m = split(substr(v[k], 2), a, " ")
            for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            med = (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
            printf "%s\t%.6g\t%d\n", k, med, n[k]
        }
    }' "$rows" | sort >"$medians"
[ -n "${RAW:-}" ] && cp "$rows" "$RAW"

echo
echo "medians of $ROUNDS alternating rounds (B/s for tput, ns for rtt); CPUs: same=$A${B:+, cross=$A+$B}"
awk -F'\t' '{ printf "%-28s %-16s %12.4g  (n=%d)\n", $1, $2, $3, $4 }' "$medians"

echo
echo "targets: best copying pipe (pipe or fifo, any placement) vs best dd pair; splice vs copying pipe"
awk -F'\t' '
    { split($1, p, "/"); what = p[1]; size = p[2]; place = p[3] }
    what == "pipe.tput" && $2 == "dd|dd" && $3 > dd[size] { dd[size] = $3 }
    (what == "pipe.tput" || what == "fifo.tput") && $2 == "opcost" && $3 > best[size] { best[size] = $3 }
    what == "pipe.tput" && $2 == "opcost" { pipe[size "/" place] = $3 }
    what == "splice.tput" && $2 == "opcost" { spl[size "/" place] = $3 }
    END {
        split("64B 512B 4KiB 64KiB 1MiB", sizes, " ")
        for (i = 1; i <= 5; i++) {
            s = sizes[i]
            if (dd[s] > 0) printf "  %-6s best copying pipe %.3g B/s, best dd pair %.3g B/s: %.2fx %s\n",
                s, best[s], dd[s], best[s] / dd[s], (best[s] >= dd[s] ? "ok" : "BELOW")
        }
        split("64KiB/same 64KiB/cross 1MiB/same 1MiB/cross", ks, " ")
        for (i = 1; i <= 4; i++) {
            k = ks[i]
            if (pipe[k] > 0) printf "  %-12s splice %.3g B/s vs pipe %.3g B/s: %.2fx %s\n",
                k, spl[k], pipe[k], spl[k] / pipe[k], (spl[k] > pipe[k] ? "ok" : "BELOW")
        }
    }' "$medians"
