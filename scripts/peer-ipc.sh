#!/usr/bin/env bash
# Compares opcost's IPC figures with classic tools on this machine, in the
# same sitting. Each peer run is followed at once by the opcost run of the
# same case (same size, same placement), so both see the same moment of a
# busy machine; several rounds; medians side by side, and the targets judged
# on paired ratios (the median over rounds of opcost / peer within a round),
# which cancels load that drifts between rounds.
#
#   pipe throughput   dd if=/dev/zero bs=S | dd of=/dev/null bs=S     vs ipc.{pipe,fifo,splice}.tput/S
#                     stress-ng --pipe --pipe-data-size S (S <= 4 KiB)
#   pipe round trip   perf bench sched pipe                           vs ipc.{pipe,unix_stream}.rtt/8B
#   TCP throughput    iperf3 -c 127.0.0.1 -l S (server on 127.0.0.1)  vs ipc.tcp.tput/S
#   CMA throughput    scripts/peer/cma_stream.c (process_vm_readv,     vs ipc.vm_readv.tput/S
#                     the same rendezvous), S = 64 KiB, 1 MiB
#   SysV round trip   scripts/peer/msg_pingpong.c (msgsnd/msgrcv)       vs ipc.sysv_msg.rtt/8B
#
# The two C peers are compiled at run time with cc -O2 (skipped, saying
# so, where there is no compiler).
#
# Peers run pinned like opcost's two ends (same: both on CPU A; cross: CPU A
# and CPU B) and unpinned ("any": the command as people type it, free to
# move to whichever CPU is idle).
#
# Usage: scripts/peer-ipc.sh [ROUNDS]   (default 5)
#   OPCOST=path   the binary (default target/release/opcost, built if missing)
#   RAW=file      also keep every figure (round, what, tool, value)
#   CASES=c       only the two C peers (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${1:-5}
OPCOST=${OPCOST:-target/release/opcost}
PORT=${PORT:-5299}
CASES=${CASES:-all}
tools="jq taskset"
[ "$CASES" = all ] && tools="dd stress-ng perf iperf3 $tools"
for tool in $tools; do
    command -v "$tool" >/dev/null || { echo "peer-ipc: $tool is not installed" >&2; exit 1; }
done
[ -x "$OPCOST" ] || cargo build --release --quiet
CC=${CC:-cc}

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
CPEERS=
if command -v "$CC" >/dev/null &&
    "$CC" -O2 -o "$work/cma_stream" scripts/peer/cma_stream.c &&
    "$CC" -O2 -o "$work/msg_pingpong" scripts/peer/msg_pingpong.c; then
    CPEERS=1
else
    echo "peer-ipc: no C compiler ($CC): the process_vm_readv and System V peers are left out" >&2
fi
if [ "$CASES" = all ]; then
    iperf3 -s -B 127.0.0.1 -p "$PORT" >/dev/null 2>&1 &
    IPERF_PID=$!
    sleep 0.5
fi

rows="$work/rows.tsv" # round <TAB> what <TAB> tool <TAB> value (B/s for tput, ns for rtt)
round=0
add() { printf '%s\t%s\t%s\t%s\n' "$round" "$1" "$2" "$3" >>"$rows"; }

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

declare -A COUNT=([64]=500000 [512]=500000 [4K]=200000 [64K]=24000 [1M]=1500)
declare -A LABEL=([64]=64B [512]=512B [4K]=4KiB [64K]=64KiB [1M]=1MiB)
places=("same $A $A")
[ -n "$B" ] && places+=("cross $A $B")

for round in $(seq 1 "$ROUNDS"); do
    echo "round $round/$ROUNDS" >&2
    [ "$CASES" = all ] && for s in 64 512 4K 64K 1M; do
        z=${LABEL[$s]}
        for p in "${places[@]}"; do
            read -r name l r <<<"$p"
            add "pipe.tput/$z/$name" "dd|dd" "$(dd_pair "$s" "${COUNT[$s]}" "$l" "$r")"
            opcost_run "ipc.pipe.tput/$z/$name" "ipc.fifo.tput/$z/$name" "ipc.splice.tput/$z/$name"
        done
        add "pipe.tput/$z/any" "dd|dd" "$(dd_pair "$s" "${COUNT[$s]}" any any)"
        case $s in 64 | 512 | 4K)
            add "pipe.tput/$z/same" "stress-ng" "$(stress_pipe "${s/K/096}" "$A")"
            add "pipe.tput/$z/any" "stress-ng" "$(stress_pipe "${s/K/096}" any)"
            ;;
        esac
    done

    if [ "$CASES" = all ]; then
        add "pipe.rtt/8B/same" "perf-sched-pipe" "$(perf_pipe "$A")"
        add "pipe.rtt/8B/any" "perf-sched-pipe" "$(perf_pipe any)"
        opcost_run ipc.pipe.rtt/8B ipc.unix_stream.rtt/8B
    fi

    if [ -n "$CPEERS" ]; then
        for p in "${places[@]}"; do
            read -r name l r <<<"$p"
            add "vm_readv.tput/64KiB/$name" "c-cma" "$("$work/cma_stream" 65536 20000 "$l" "$r")"
            add "vm_readv.tput/1MiB/$name" "c-cma" "$("$work/cma_stream" 1048576 2000 "$l" "$r")"
            opcost_run "ipc.vm_readv.tput/64KiB/$name" "ipc.vm_readv.tput/1MiB/$name"
            add "sysv_msg.rtt/8B/$name" "c-msgq" "$("$work/msg_pingpong" 8 20000 "$l" "$r")"
            opcost_run "ipc.sysv_msg.rtt/8B/$name"
        done
    fi

    [ "$CASES" = all ] && for len in 64K 1M; do
        z=${LABEL[$len]}
        add "tcp.tput/$z/same" iperf3 "$(iperf "$len" "$A,$A")"
        opcost_run "ipc.tcp.tput/$z/same"
        if [ -n "$B" ]; then
            add "tcp.tput/$z/cross" iperf3 "$(iperf "$len" "$A,$B")"
            opcost_run "ipc.tcp.tput/$z/cross"
        fi
        add "tcp.tput/$z/any" iperf3 "$(iperf "$len" any)"
    done
done
[ -n "${RAW:-}" ] && cp "$rows" "$RAW"

echo
echo "medians of $ROUNDS rounds (B/s for tput, ns for rtt); CPUs: same=$A${B:+, cross=$A+$B}"
awk -F'\t' '
    { k = $2 "\t" $3; v[k] = v[k] " " $4; n[k]++ }
    END {
        for (k in v) {
            m = split(substr(v[k], 2), a, " ")
            for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            med = (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
            split(k, kk, "\t")
            printf "%-26s %-16s %12.4g  (n=%d)\n", kk[1], kk[2], med, n[k]
        }
    }' "$rows" | sort

# An awk function for the two summaries below: median(" x y z"), the median
# of a space-separated list with a leading space (-1 for an empty one).
AWK_MEDIAN='
    function median(list,    a, m, i, j, t) {
        m = split(substr(list, 2), a, " ")
        if (m == 0) return -1
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    }'

echo
echo "opcost vs the C peers, as the median over rounds of the ratio within a round"
echo "(throughput: opcost / peer; round trip: peer / opcost; 1.00 = the same figure)"
awk -F'\t' "$AWK_MEDIAN"'
    { v[$1 SUBSEP $2 SUBSEP $3] = $4; rounds[$1] = 1 }
    END {
        n = split("vm_readv.tput/64KiB c-cma t|vm_readv.tput/1MiB c-cma t|sysv_msg.rtt/8B c-msgq l", cases, "|")
        for (i = 1; i <= n; i++) {
            split(cases[i], c, " ")
            for (pi = 1; pi <= 2; pi++) {
                p = pi == 1 ? "same" : "cross"; list = ""
                for (r in rounds) {
                    o = v[r, c[1] "/" p, "opcost"] + 0; q = v[r, c[1] "/" p, c[2]] + 0
                    if (o > 0 && q > 0) list = list " " (c[3] == "t" ? o / q : q / o)
                }
                m = median(list)
                if (m > 0) printf "  %-24s %-6s %.2fx\n", c[1], p, m
            }
        }
    }' "$rows"

echo
echo "targets, as the median over rounds of the ratio within a round:"
echo "  best copying pipe (pipe or fifo) vs the dd pair of the same placement, and vs the unpinned dd pair"
echo "  zero-copy splice vs the copying pipe"
awk -F'\t' "$AWK_MEDIAN"'
    function verdict(r, what) { return r < 0 ? "n/a" : sprintf("%.2fx %s", r, r >= 1 ? "ok" : "BELOW " what) }
    { v[$1 SUBSEP $2 SUBSEP $3] = $4; rounds[$1] = 1 }
    END {
        split("64B 512B 4KiB 64KiB 1MiB", sizes, " ")
        split("same cross", places, " ")
        for (i = 1; i <= 5; i++) {
            s = sizes[i]; vs_any = ""
            line = sprintf("  %-6s", s)
            for (j = 1; j <= 2; j++) {
                p = places[j]; pair = ""; spl = ""
                for (r in rounds) {
                    a = v[r, "pipe.tput/" s "/" p, "opcost"] + 0
                    f = v[r, "fifo.tput/" s "/" p, "opcost"] + 0
                    best = a > f ? a : f
                    d = v[r, "pipe.tput/" s "/" p, "dd|dd"] + 0
                    z = v[r, "splice.tput/" s "/" p, "opcost"] + 0
                    if (best > 0 && d > 0) pair = pair " " best / d
                    if (a > 0 && z > 0) spl = spl " " z / a
                    if (best > bestr[r]) bestr[r] = best
                }
                line = line sprintf("  %s: vs dd %s", p, verdict(median(pair), "dd"))
                if (s == "64KiB" || s == "1MiB") line = line sprintf(", splice/pipe %s", verdict(median(spl), "pipe"))
            }
            for (r in rounds) {
                d = v[r, "pipe.tput/" s "/any", "dd|dd"] + 0
                if (bestr[r] > 0 && d > 0) vs_any = vs_any " " bestr[r] / d
                bestr[r] = 0
            }
            print line sprintf("  any: best vs unpinned dd %s", verdict(median(vs_any), "dd"))
        }
    }' "$rows"
