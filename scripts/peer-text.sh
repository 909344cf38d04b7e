#!/usr/bin/env bash
# Compares opcost's line-iteration benchmarks with `wc -l` on a file of the
# same shape and size (CRLF, lines of about 40 bytes, 64 MiB: opcost's
# default profile), alternating the two (wc -l, opcost, wc -l again) so
# that a change in the machine's load hits both, and prints the medians
# side by side, with wc -l against itself as the measure of the noise.
#
#   scripts/peer-text.sh [DIR] [ROUNDS]
#
# DIR defaults to a new directory under /var/tmp; ROUNDS to 5. The file is
# written inside a private subdirectory of DIR and removed at the end
# (also on Ctrl-C). OPCOST names the binary (default: target/release/opcost,
# built if missing).
#
# wc -l is timed by hyperfine (warm cache: one warm-up run, then 10 runs,
# no shell), so its rate includes starting the program, like opcost's own
# text.lines.wc_l row; opcost's other rows are one pass each inside the
# process. Rates are file bytes over the median time, in MB/s (10^6).
set -euo pipefail

DIR=${1:-}
ROUNDS=${2:-5}
SIZE_MIB=64
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/lib.sh"
OPCOST=${OPCOST:-$root/target/release/opcost}

for tool in hyperfine jq awk wc; do
    command -v "$tool" >/dev/null || { echo "error: $tool is not installed" >&2; exit 2; }
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "error: ROUNDS must be a positive integer, not '$ROUNDS'" >&2; exit 2; }
if [[ ! -x $OPCOST ]]; then
    (cd "$root" && cargo build --release --quiet)
fi
private_work_dir

file=$work/lines-crlf-40B.txt
out=$work/out.json
hf=$work/hyperfine.json

# One MiB of whole lines of lowercase letters and spaces, 20 to 60 bytes
# with the CRLF, repeated to the size (as opcost lays out its file).
awk -v size=$((1 << 20)) 'BEGIN {
    srand(4453); n = 0
    for (c = 0; c < 26; c++) ch[c] = sprintf("%c", 97 + c)
    while (1) {
        len = 18 + int(rand() * 41); line = ch[int(rand() * 26)]
        for (i = 1; i < len; i++) line = line (rand() < 1/6 ? " " : ch[int(rand() * 26)])
        if (n + len + 2 > size) break
        printf "%s\r\n", line; n += len + 2
    }
}' >"$work/block"
for ((i = 0; i < SIZE_MIB; i++)); do cat "$work/block"; done >"$file"
rm -f "$work/block"
bytes=$(stat -c %s "$file")
lines=$(wc -l <"$file")

# Prints the wc -l rate (B/s) over the median of hyperfine's runs.
wc_rate() {
    hyperfine -N --warmup 1 --runs 10 --export-json "$hf" "wc -l $file" >/dev/null 2>&1
    jq -r --argjson b "$bytes" '.results[0].median | $b / .' "$hf"
}

ids=(wc_l memchr_mmap memchr_block read_until lines)
# Prints "method B/s" lines, opcost's side.
opcost_values() {
    local pats=()
    for m in "${ids[@]}"; do pats+=("text.lines.$m/crlf-40B"); done
    "$OPCOST" run "${pats[@]}" --profile default --dir "$work" --no-save --json "$out" >/dev/null 2>&1
    jq -r '.results[] | "\(.params.method) \(.median) \(.details.lines)"' "$out"
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {
    if (NR == 0) { print "nan"; exit }
    if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2] + v[NR/2+1]) / 2 }'; }

declare -A opc
wc1="" wc2=""
echo "comparing on $file ($bytes bytes, $lines lines), $ROUNDS alternating rounds (wc -l, opcost, wc -l again)" >&2
for ((r = 1; r <= ROUNDS; r++)); do
    wc1+=" $(wc_rate)"
    while read -r m v n; do
        opc[$m]+=" $v"
        # opcost's file has the same shape, so about as many lines.
        [[ $n -gt 0 ]] || { echo "error: opcost reported no lines for $m" >&2; exit 1; }
    done < <(opcost_values)
    wc2+=" $(wc_rate)"
    echo "  round $r done" >&2
done

w=$(echo "$wc1" | median)
printf '\nmedians of %d rounds, MB/s (ratio to wc -l timed by hyperfine)\n' "$ROUNDS"
row() { awk -v n="$1" -v v="$2" -v w="$w" 'BEGIN { printf "%-28s %10.1f %8.2f\n", n, v / 1e6, (w > 0 ? v / w : 0) }'; }
row "wc -l (hyperfine)" "$w"
row "wc -l again (hyperfine)" "$(echo "$wc2" | median)"
for m in "${ids[@]}"; do
    row "opcost text.lines.$m" "$(echo "${opc[$m]:-}" | median)"
done
