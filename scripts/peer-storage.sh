#!/usr/bin/env bash
# Compares opcost's storage benchmarks with fio on the same directory and
# sizes, alternating the two (fio, opcost, fio, opcost...) so that a change
# in the machine's load hits both, and prints the medians side by side.
#
#   scripts/peer-storage.sh [DIR] [ROUNDS]
#
# DIR defaults to a new directory under /var/tmp; ROUNDS to 5. Everything is
# written inside a private subdirectory of DIR and removed at the end.
# OPCOST names the binary (default: target/release/opcost, built if missing).
#
# Matching jobs (opcost's default profile uses 256 MiB files):
#   seq write   fio rw=write  bs=1M direct=1 psync, over a laid-out file
#               opcost storage.seq.write.direct
#   seq read    fio rw=read   bs=1M direct=1 psync
#               opcost storage.seq.read.direct
#   randread    fio rw=randread bs=4k direct=1 psync (QD1): mean latency
#               opcost storage.rand.read.qd1 (median of batch means)
#   fdatasync   fio rw=write bs=4k fdatasync=1 file_append=1: 1/IOPS
#               opcost storage.sync.fdatasync (append 4 KiB + fdatasync)
set -euo pipefail

DIR=${1:-}
ROUNDS=${2:-5}
SIZE=256M
root=$(cd "$(dirname "$0")/.." && pwd)
OPCOST=${OPCOST:-$root/target/release/opcost}

for tool in fio jq; do
    command -v "$tool" >/dev/null || { echo "error: $tool is not installed" >&2; exit 2; }
done
if [[ ! -x $OPCOST ]]; then
    (cd "$root" && cargo build --release --quiet)
fi
if [[ -z $DIR ]]; then
    DIR=$(mktemp -d /var/tmp/opcost-peer-XXXXXX)
    made_dir=$DIR
fi
[[ -d $DIR && -w $DIR ]] || { echo "error: $DIR is not a writable directory" >&2; exit 2; }
work=$(mktemp -d "$DIR/opcost-peer-XXXXXX")
cleanup() { rm -rf "$work" ${made_dir:+"$made_dir"}; }
trap cleanup EXIT
trap 'exit 130' INT TERM

data=$work/fio-seq.dat
log=$work/fio-log.dat
out=$work/out.json

fio_json() { fio --output-format=json --directory="$work" "$@" 2>/dev/null; }

# The fio file, laid out once with real data so writes overwrite it (as
# opcost's do); 256 MiB like opcost's default profile.
fio_json --name=layout --rw=write --bs=1M --size=$SIZE --filename="$(basename "$data")" \
    --end_fsync=1 >/dev/null

fio_value() {
    case $1 in
    seqwrite)
        fio_json --name=w --rw=write --bs=1M --size=$SIZE --direct=1 --ioengine=psync \
            --filename="$(basename "$data")" | jq '.jobs[0].write.bw_bytes' ;;
    seqread)
        fio_json --name=r --rw=read --bs=1M --size=$SIZE --direct=1 --ioengine=psync \
            --filename="$(basename "$data")" | jq '.jobs[0].read.bw_bytes' ;;
    randread)
        fio_json --name=rr --rw=randread --bs=4k --size=$SIZE --direct=1 --ioengine=psync \
            --runtime=3 --time_based --filename="$(basename "$data")" |
            jq '.jobs[0].read.lat_ns.mean' ;;
    fdatasync)
        rm -f "$log"
        fio_json --name=s --rw=write --bs=4k --size=8M --ioengine=sync --fdatasync=1 \
            --file_append=1 --runtime=5 --filename="$(basename "$log")" |
            jq '1e9 / .jobs[0].write.iops'
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

opcost_value() {
    local id
    id=$(opcost_id "$1")
    "$OPCOST" run "$id" --profile default --dir "$work" --no-save --json "$out" >/dev/null 2>&1
    jq --arg id "$id" '.results[] | select(.id == $id) | .median' "$out"
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {
    if (NR == 0) { print "nan"; exit }
    if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2] + v[NR/2+1]) / 2 }'; }

jobs=(seqwrite seqread randread fdatasync)
declare -A fio_vals opc_vals
echo "comparing in $work, $ROUNDS alternating rounds (fio, opcost, ...)" >&2
for ((r = 1; r <= ROUNDS; r++)); do
    for job in "${jobs[@]}"; do
        f=$(fio_value "$job")
        o=$(opcost_value "$job")
        fio_vals[$job]+=" $f"
        opc_vals[$job]+=" $o"
        printf '  round %d %-9s fio %-14s opcost %s\n' "$r" "$job" "$f" "$o" >&2
    done
done

printf '\n%-10s %-6s %12s %12s %8s\n' job unit fio opcost opcost/fio
for job in "${jobs[@]}"; do
    f=$(echo "${fio_vals[$job]}" | median)
    o=$(echo "${opc_vals[$job]}" | median)
    case $job in
    seq*) unit=MB/s; scale=1e-6 ;;
    *) unit=us/op; scale=1e-3 ;;
    esac
    awk -v j="$job" -v u="$unit" -v f="$f" -v o="$o" -v s="$scale" \
        'BEGIN { printf "%-10s %-6s %12.1f %12.1f %8.2f\n", j, u, f*s, o*s, (f > 0 ? o/f : 0) }'
done
