#!/usr/bin/env bash
# Compares opcost's memory figures with peer tools on this machine, in one
# sitting: the runs alternate (peer, opcost, peer, opcost...) so that load
# from other work hits both sides alike, and the medians are printed side
# by side with the accounting each figure uses.
#
#   perf bench mem memcpy/memset -f all (256 MB) vs memory.bandwidth.copy.*, write.* (every method)
#   perf bench mem memcpy default vs memory.bandwidth.copy/threads=1 (bytes copied)
#   mbw MEMCPY, DUMB, MCBLOCK vs copy, copy_dumb, copy_block         (bytes copied;
#                             mbw's MCBLOCK re-reads one cached source block: not comparable)
#   sysbench memory read/write vs read, write, 1 thread and all CPUs (bytes read/written)
#   sysfs cache sizes       vs the levels found in the latency curve
#
# Usage: scripts/peer-memory.sh [ROUNDS]   (env: OPCOST=path, CURVE_PROFILE=quick|default)
# Needs: perf (linux-perf), mbw, sysbench, jq. Missing peers are skipped.
set -euo pipefail

ROUNDS=${1:-5}
CURVE_PROFILE=${CURVE_PROFILE:-default}
cd "$(dirname "$0")/.."
if [[ -z "${OPCOST:-}" ]]; then
    cargo build --release --quiet
    OPCOST=target/release/opcost
fi
command -v jq >/dev/null || { echo "jq is needed to read opcost's JSON" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cpus=$(nproc)

# opcost's array size decides the peers' buffer size.
"$OPCOST" run memory.bandwidth.read/threads=1 --profile default --samples 3 --json "$work/size.json" >/dev/null 2>&1
mib=$(jq -r '[.results[] | .details.array_bytes][0] / 1048576 | floor' "$work/size.json")
echo "buffers: ${mib} MiB (opcost's array at the default profile), ${ROUNDS} alternating rounds, ${cpus} CPUs"

key() { echo "$work/m_${1//[^A-Za-z0-9=.]/_}"; }
record() { echo "$2" >>"$(key "$1")"; }   # metric, value in B/s

median() {
    sort -g "$(key "$1")" 2>/dev/null | awk '{v[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'
}

# Peers report bytes over the total time of their loops; the same statistic
# from opcost's samples is their harmonic mean ("opcost <id>"). opcost's own
# headline figure, the median sample, is kept too ("median <id>").
opcost_bw() {   # ids...
    "$OPCOST" run "$@" --profile default --json "$work/o.json" >/dev/null 2>&1
    jq -r '.results[] | "\(.id) \(.samples | length / (map(1 / .) | add)) \(.median)"' "$work/o.json" |
        while read -r id overall med; do
            record "opcost $id" "$overall"
            record "median $id" "$med"
        done
}

# The best value of one round among metrics matching a pattern (B/s).
round_best() {   # round, metric name pattern (awk regex on the id)
    awk -v re="$2" '$1 ~ re {print $2}' "$work/round_$1" | sort -g | tail -1
}

for ((r = 1; r <= ROUNDS; r++)); do
    echo "round $r/$ROUNDS"
    : >"$work/round_$r"
    # Each kernel's peers and opcost's methods for it run back to back, so
    # that load from other work (which comes and goes over the minutes a
    # round takes) hits the pair alike; the paired ratio of the round's bests
    # is kept too.
    for pair in memcpy:copy memset:write; do
        bench=${pair%%:*}
        kern=${pair##*:}
        if have perf; then
            # Every function perf offers (-f all), at 256 MB as in the targets;
            # perf prints GB/sec with binary prefixes (GiB/s).
            perf bench mem "$bench" -s 256MB -l 10 -f all 2>/dev/null |
                awk -v b="$bench" '/^# function/ {f=$3; gsub(/\047/, "", f)}
                    /B\/sec/ {u=$2; x=$1; m=(u ~ /^GB/)?1073741824:(u ~ /^MB/)?1048576:1024; printf "perf_%s_%s %.0f\n", b, f, x*m}' |
                while read -r metric v; do record "$metric" "$v"; echo "$metric $v" >>"$work/round_$r"; done
        fi
        # opcost's methods: glibc above/below its threshold, rep movsb/stosb,
        # vector, non-temporal (the ids with a method: KERNEL.METHOD/threads=1).
        opcost_bw "memory.bandwidth.$kern."
        jq -r '.results[] | "opcost_\(.id) \(.samples | length / (map(1 / .) | add))"' "$work/o.json" >>"$work/round_$r"
        p=$(round_best "$r" "^perf_${bench}_")
        o=$(round_best "$r" "^opcost_memory.bandwidth.$kern[.]")
        [[ -n "$p" && -n "$o" ]] && record "paired $kern" "$(awk -v o="$o" -v p="$p" 'BEGIN {print o / p}')"
    done
    opcost_bw memory.bandwidth.read.
    opcost_bw memory.bandwidth.copy/threads=1
    if have mbw; then
        for t in 0 1 2; do
            name=$(echo "MEMCPY DUMB MCBLOCK" | cut -d' ' -f$((t + 1)))
            # Per-iteration MiB/s (not the average, which includes the first, faulting pass).
            mbw -n 10 -t$t "$mib" 2>/dev/null | awk '!/AVG/ && /Copy:/ {print $(NF-1)*1048576}' |
                while read -r v; do record "mbw $name" "$v"; done
        done
    fi
    opcost_bw memory.bandwidth.copy/threads=1 memory.bandwidth.copy_dumb/threads=1 memory.bandwidth.copy_block/threads=1
    if have sysbench; then
        for op in read write; do
            for th in 1 "$cpus"; do
                v=$(sysbench memory --memory-block-size="${mib}M" --memory-total-size="$((mib * 30 * th))M" \
                    --memory-oper=$op --threads="$th" run 2>/dev/null |
                    awk -F'[()]' '/MiB transferred/ {split($2, a, " "); printf "%.0f", a[1]*1048576}')
                [[ -n "$v" ]] && record "sysbench $op threads=$th" "$v"
            done
        done
    fi
    opcost_bw memory.bandwidth.read/ memory.bandwidth.write/
done

# The best of a family of metrics (by median over rounds): "NAME value".
best_of() {   # glob on metric file names
    for f in "$work"/m_$1; do
        [[ -e $f ]] || continue
        n=${f#"$work"/m_}
        printf '%s %s\n' "$n" "$(sort -g "$f" | awk '{v[NR]=$1} END {print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}')"
    done | sort -k2 -g | tail -1
}

best() {
    sort -g "$(key "$1")" 2>/dev/null | tail -1
}

row() {   # label, peer metric, opcost metric, accounting
    local p o pb ob om
    p=$(median "$2")
    o=$(median "$3")
    pb=$(best "$2")
    ob=$(best "$3")
    om=$(median "${3/opcost/median}")
    awk -v l="$1" -v p="$p" -v o="$o" -v pb="${pb:-nan}" -v ob="${ob:-nan}" -v om="$om" -v a="$4" '
    function f(x) { return (x == "nan") ? "-" : sprintf("%.2f", x / 1e9) }
    function d(x, y) { return (x == "nan" || y == "nan") ? "-" : sprintf("%+.1f%%", (y / x - 1) * 100) }
    BEGIN { printf "%-30s %8s %8s %7s   %8s %8s %7s   %8s  %s\n", l, f(p), f(o), d(p, o), f(pb), f(ob), d(pb, ob), f(om), a }'
}

echo
echo "GB/s (1e9 B/s), bytes over total time as the peers count it: the median of all rounds,"
echo "then the best round (least disturbed by other load); last, opcost's own figure (median sample)"
printf "%-30s %8s %8s %7s   %8s %8s %7s   %8s  %s\n" "" "peer" "opcost" "diff" "peer" "opcost" "diff" "opcost" "accounting"
row "perf memcpy default / copy" "perf_memcpy_default" "opcost memory.bandwidth.copy/threads=1" "bytes copied"
row "mbw MEMCPY / copy" "mbw MEMCPY" "opcost memory.bandwidth.copy/threads=1" "bytes copied"
row "mbw DUMB / copy_dumb" "mbw DUMB" "opcost memory.bandwidth.copy_dumb/threads=1" "bytes copied"
row "mbw MCBLOCK / copy_block" "mbw MCBLOCK" "opcost memory.bandwidth.copy_block/threads=1" "bytes copied"
row "sysbench read 1T / read" "sysbench read threads=1" "opcost memory.bandwidth.read/threads=1" "bytes read"
row "sysbench write 1T / write" "sysbench write threads=1" "opcost memory.bandwidth.write/threads=1" "bytes written"
row "sysbench read ${cpus}T / read all" "sysbench read threads=$cpus" "opcost memory.bandwidth.read/threads=all" "bytes read"
row "sysbench write ${cpus}T / write all" "sysbench write threads=$cpus" "opcost memory.bandwidth.write/threads=all" "bytes written"
echo
echo "the machine's bandwidth, best method against the best peer (GB/s, medians over rounds):"
for k in copy:perf_memcpy_*:mbw_MEMCPY write:perf_memset_*:sysbench_write_threads=1 read:sysbench_read_threads=1:sysbench_read_threads=1; do
    IFS=: read -r kern g1 g2 <<<"$k"
    p1=$(best_of "$g1"); p2=$(best_of "$g2")
    peer=$(printf '%s\n%s\n' "$p1" "$p2" | sort -k2 -g | tail -1)
    # Methods only: copy_block re-copies one cached block, not a memory copy.
    mine=$(best_of "opcost_memory.bandwidth.${kern}.*threads=1")
    paired=nan
    [[ -s "$(key "paired $kern")" ]] && paired=$(median "paired $kern")
    awk -v k="$kern" -v p="$peer" -v o="$mine" -v pr="$paired" 'BEGIN {
        split(p, a, " "); split(o, b, " ");
        printf "  %-6s peer %-40s %6.2f   opcost %-55s %6.2f   ratio %.2f%s\n", k, a[1], a[2]/1e9, b[1], b[2]/1e9, (a[2] > 0) ? b[2]/a[2] : 0,
            (pr == "nan") ? "" : sprintf("   paired (median of the rounds'"'"' best/best) %.2f", pr) }'
done
echo "  (perf -f all: default=glibc, x86-64-unrolled, x86-64-movsq/stosq, x86-64-movsb/stosb at 256 MB;"
echo "   opcost: memory.bandwidth.{copy,write,read}.METHOD/threads=1 and the plain kernels)"
row "sysbench read ${cpus}T / read dynamic" "sysbench read threads=$cpus" "opcost memory.bandwidth.read/threads=all_dynamic" "bytes read"
row "sysbench write ${cpus}T / write dynamic" "sysbench write threads=$cpus" "opcost memory.bandwidth.write/threads=all_dynamic" "bytes written"
echo "notes: mbw's MCBLOCK never advances its source pointer (see objdump of mbw): it copies one"
echo "       cache-resident 256 KiB block again and again, so it mostly measures stores."
echo "       sysbench hands blocks to whichever thread is free; opcost, like STREAM, gives each"
echo "       thread its own slice and waits for the last, so load from other work lowers it more."

echo
echo "latency curve (${CURVE_PROFILE} profile) against sysfs:"
for d in /sys/devices/system/cpu/cpu0/cache/index*; do
    [[ -r $d/size ]] || continue
    printf "  sysfs L%s %-12s %s\n" "$(cat "$d/level")" "$(cat "$d/type")" "$(cat "$d/size")"
done
"$OPCOST" run memory.latency --profile "$CURVE_PROFILE" --json "$work/curve.json" >/dev/null 2>&1
jq -r '.findings[] | select(.area == "memory") | "  opcost: \(.text)"' "$work/curve.json" | grep -v bandwidth
