#!/usr/bin/env bash
# Compares opcost's storage benchmarks with fio on the same directory and
# sizes, alternating the two (fio, opcost, fio again, for each job) so that
# a change in the machine's load hits both, and prints the medians side by
# side, with fio against itself as the measure of the machine's noise.
#
#   scripts/peer-storage.sh [DIR] [ROUNDS]
#
# DIR defaults to a new directory under /var/tmp; ROUNDS to 5. Everything is
# written inside a private subdirectory of DIR and removed at the end.
# OPCOST names the binary (default: target/release/opcost, built if missing).
#
# Matching jobs (opcost's default profile: reads over 256 MiB files, direct
# writes in 32 MiB batches rotating through a 128 MiB file):
#   seqwrite    fio rw=write bs=1M direct=1 psync over a laid-out 128 MiB file
#               opcost storage.seq.write.direct
#   seqread     fio rw=read bs=1M direct=1 psync over a 256 MiB file
#               opcost storage.seq.read.direct
#   randread    fio rw=randread bs=4k direct=1 psync (QD1), 256 MiB file
#               opcost storage.rand.read.qd1
#   fdatasync   fio rw=write bs=4k fdatasync=1 into a new 64 MiB file, which
#               fio preallocates (fallocate), as etcd does its WAL segments
#               opcost storage.sync.fdatasync (the same pattern)
# Like is compared with like. fio's bandwidth is bytes over time, so
# opcost's side of a throughput row is the same aggregate of its samples
# (their harmonic mean), with fio looping over its file 10 times to move
# about as much data as opcost's run. Latencies on a shared or virtual disk
# have long tails, so they are compared twice: median with median (fio's
# clat p50, opcost's per-op p50) and mean with mean (fio's lat mean or
# 1/IOPS, opcost's mean of equal-sized batch means).
set -euo pipefail

DIR=${1:-}
ROUNDS=${2:-5}
SIZE=256M
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/lib.sh"
OPCOST=${OPCOST:-$root/target/release/opcost}

for tool in fio jq; do
    command -v "$tool" >/dev/null || { echo "error: $tool is not installed" >&2; exit 2; }
done
if [[ ! -x $OPCOST ]]; then
    (cd "$root" && cargo build --release --quiet)
fi
private_work_dir

rdata=$work/fio-read.dat
wdata=$work/fio-write.dat
log=$work/fio-log.dat
out=$work/out.json

fio_json() { fio --output-format=json --directory="$work" "$@" 2>/dev/null; }

# The fio file for writes, laid out once with real data so that writes
# overwrite it (as opcost's do). The read jobs lay their file out afresh
# each time (fio does when it is missing, then fsyncs it), as opcost's
# read benchmarks write theirs just before reading.
fio_json --name=layout --rw=write --bs=1M --size=128M --filename="$(basename "$wdata")" \
    --end_fsync=1 >/dev/null

# Prints "name value" lines for a job, fio's side.
fio_values() {
    case $1 in
    seqwrite)
        fio_json --name=w --rw=write --bs=1M --size=128M --loops=10 --direct=1 --ioengine=psync \
            --filename="$(basename "$wdata")" | jq -r '"seqwrite \(.jobs[0].write.bw_bytes)"' ;;
    seqread)
        rm -f "$rdata" # laid out afresh, as opcost lays out its file just before
        fio_json --name=r --rw=read --bs=1M --size=256M --loops=10 --direct=1 --ioengine=psync \
            --filename="$(basename "$rdata")" | jq -r '"seqread \(.jobs[0].read.bw_bytes)"' ;;
    randread)
        rm -f "$rdata"
        fio_json --name=rr --rw=randread --bs=4k --size=256M --direct=1 --ioengine=psync \
            --runtime=3 --time_based --filename="$(basename "$rdata")" |
            jq -r '.jobs[0].read | "randread_p50 \(.clat_ns.percentile["50.000000"])",
                                   "randread_mean \(.lat_ns.mean)"' ;;
    fdatasync)
        rm -f "$log"
        fio_json --name=s --rw=write --bs=4k --size=64M --ioengine=sync --fdatasync=1 \
            --runtime=5 --filename="$(basename "$log")" |
            jq -r '.jobs[0] | "fdatasync_p50 \(.sync.lat_ns.percentile["50.000000"] + .write.lat_ns.mean)",
                             "fdatasync_mean \(1e9 / .write.iops)"'
        rm -f "$log" ;;
    esac
}

opcost_id() {
    case $1 in
    seqwrite) echo storage.seq.write.direct ;;
    seqread) echo storage.seq.read.direct ;;
    randread) echo storage.rand.read.qd1 ;;
    fdatasync) echo storage.sync.fdatasync ;;
    esac
}

# Prints "name value" lines for a job, opcost's side.
opcost_values() {
    local id
    id=$(opcost_id "$1")
    "$OPCOST" run "$id" --profile default --dir "$work" --no-save --json "$out" >/dev/null 2>&1
    jq -r --arg id "$id" --arg job "$1" '.results[] | select(.id == $id) |
        if .per_op then "\($job)_p50 \(.per_op.p50)", "\($job)_mean \(.mean)"
        else "\($job) \(.samples | length / (map(1 / .) | add))" end' "$out"
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {
    if (NR == 0) { print "nan"; exit }
    if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2] + v[NR/2+1]) / 2 }'; }

jobs=(seqwrite seqread randread fdatasync)
rows=(seqwrite seqread randread_p50 randread_mean fdatasync_p50 fdatasync_mean)
# Each round runs every job as fio, opcost, fio again: the second fio run
# shows how far the machine lets a tool disagree with itself.
declare -A fio_vals opc_vals fio2_vals
echo "comparing in $work, $ROUNDS alternating rounds (fio, opcost, fio again)" >&2
for ((r = 1; r <= ROUNDS; r++)); do
    for job in "${jobs[@]}"; do
        while read -r name v; do fio_vals[$name]+=" $v"; done < <(fio_values "$job")
        while read -r name v; do opc_vals[$name]+=" $v"; done < <(opcost_values "$job")
        while read -r name v; do fio2_vals[$name]+=" $v"; done < <(fio_values "$job")
    done
    echo "  round $r done" >&2
done

printf '\nmedians of %d rounds\n' "$ROUNDS"
printf '%-15s %-6s %10s %10s %10s %11s %12s\n' job unit fio opcost "fio again" opcost/fio "fio again/fio"
for row in "${rows[@]}"; do
    f=$(echo "${fio_vals[$row]:-}" | median)
    o=$(echo "${opc_vals[$row]:-}" | median)
    g=$(echo "${fio2_vals[$row]:-}" | median)
    case $row in
    seq*) unit=MB/s; scale=1e-6 ;;
    *) unit=us/op; scale=1e-3 ;;
    esac
    awk -v j="$row" -v u="$unit" -v f="$f" -v o="$o" -v g="$g" -v s="$scale" \
        'BEGIN { printf "%-15s %-6s %10.1f %10.1f %10.1f %11.2f %12.2f\n", j, u, f*s, o*s, g*s, (f > 0 ? o/f : 0), (f > 0 ? g/f : 0) }'
done

printf '\nper-round values (fio | opcost | fio again)\n'
for row in "${rows[@]}"; do
    case $row in seq*) scale=1e-6 ;; *) scale=1e-3 ;; esac
    each() { for v in $1; do awk -v v="$v" -v s="$scale" 'BEGIN { printf "%.0f ", v*s }'; done; }
    printf '%-15s %s| %s| %s\n' "$row" "$(each "${fio_vals[$row]:-}")" "$(each "${opc_vals[$row]:-}")" "$(each "${fio2_vals[$row]:-}")"
done
