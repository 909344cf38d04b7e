#!/usr/bin/env bash
# Compares `opcost cmd` with `hyperfine -N` (no shell) on this machine, in
# alternating runs (hyperfine, opcost, hyperfine, opcost...) so that load
# from other work hits both alike; the medians are printed side by side
# with their ratio opcost/hyperfine. Both tools run the same commands with
# the same warm-up and run counts, stdin and stdout on /dev/null:
#
#  - /bin/true: nearly pure process start-up (fork/exec, dynamic loading, exit).
#  - the E13 Mandelbrot program in C (tests/fixtures/cmd/mandelbrot.c,
#    compiled with cc -O2) at N = MANDEL_N: a real program.
#
# Then the check only opcost can make: the net figure of a C loop of N
# iterations (tests/fixtures/cmd/loop.c) minus the same program at N = 1,
# scanned over N; it should be a straight line through the origin: the
# least-squares slope, R², and net/N per point are printed.
#
# Last, the E13 question for the interpreters the machine has (python3,
# node, lua): the Mandelbrot net of start-up with opcost's default run
# count (runs go on while the CI of the net spans zero), median and CI.
#
# Needs: hyperfine, jq, cc.
# Usage: scripts/peer-cmd.sh [ROUNDS [RUNS [MANDEL_N]]]   (default 5 rounds, 50 runs, N 200)
# Run it under the machine's timing lock when others measure too:
#   flock /tmp/opcost-timing.lock scripts/peer-cmd.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ROUNDS=${1:-5}
RUNS=${2:-50}
MANDEL_N=${3:-200}
need hyperfine jq cc
cargo build --release --quiet
OPCOST=target/release/opcost
TRUE=$(command -v true | grep / || echo /bin/true)
temp_dir
cc -O2 -o "$TMP/mandelbrot" tests/fixtures/cmd/mandelbrot.c
cc -O2 -o "$TMP/loop" tests/fixtures/cmd/loop.c
MANDEL="$TMP/mandelbrot $MANDEL_N"

: >"$TMP/hf_true"; : >"$TMP/hf_mandel"; : >"$TMP/op_true"; : >"$TMP/op_mandel"
for i in $(seq 1 "$ROUNDS"); do
  hyperfine -N --style none --warmup 3 --runs "$RUNS" --export-json "$TMP/hf.json" "$TRUE" "$MANDEL" >/dev/null 2>&1
  jq -r '.results[0].median * 1e9' "$TMP/hf.json" >>"$TMP/hf_true"
  jq -r '.results[1].median * 1e9' "$TMP/hf.json" >>"$TMP/hf_mandel"
  "$OPCOST" cmd --no-save --warmup 3 --runs "$RUNS" --name true --name mandelbrot \
    --json "$TMP/op.json" "$TRUE" "$MANDEL" >/dev/null 2>&1
  opcost_stat "$TMP/op.json" cmd.true median >>"$TMP/op_true"
  opcost_stat "$TMP/op.json" cmd.mandelbrot median >>"$TMP/op_mandel"
  echo "round $i/$ROUNDS done" >&2
done

row() { # label peer-file opcost-file
  medians_row '%-28s %12.0f ns %12.0f ns %8.3f\n' 28 "$1" "$2" "$3" "  hyperfine rounds (ns)" "  opcost rounds (ns)"
}
echo
echo "medians of $ROUNDS alternating rounds of $RUNS runs each (hyperfine -N vs opcost cmd); load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-28s %15s %15s %8s\n' "" "hyperfine" "opcost" "ratio"
row "$TRUE" "$TMP/hf_true" "$TMP/op_true"
row "mandelbrot $MANDEL_N (C)" "$TMP/hf_mandel" "$TMP/op_mandel"

echo
echo "net of a C loop of N iterations minus the loop at N = 1 (opcost cmd -P n, $RUNS pairs per point)"
"$OPCOST" cmd --no-save --warmup 3 --runs "$RUNS" -P n 0 40000000 --step 10000000 \
  --json "$TMP/lin.json" "$TMP/loop {n}" ::: "$TMP/loop 1" >/dev/null 2>&1
printf '%12s %14s %14s %12s\n' "N" "net" "95% CI ±" "net/N"
jq -r '.results[] | select(.id | test("^cmd\\.loop/")) | [.params.n, .median, (.ci_high - .ci_low) / 2] | @tsv' "$TMP/lin.json" |
  awk -F'\t' '{printf "%12d %11.3f ms %11.3f ms %9s\n", $1, $2/1e6, $3/1e6, ($1 > 0 ? sprintf("%.3f ns", $2/$1) : "—")}'
jq -r '.findings[] | select(.text | test("per unit of n")) | .text' "$TMP/lin.json"

echo
echo "Mandelbrot $MANDEL_N net of start-up (N = 1), opcost cmd with its default run count"
printf '%-22s %12s %25s %6s  %s\n' "" "net" "95% CI" "pairs" "baseline share"
for lang in python3:py node:js lua:lua; do
  prog=${lang%%:*}
  command -v "$prog" >/dev/null || { echo "  $prog: not installed, skipped"; continue; }
  f=tests/fixtures/cmd/mandelbrot.${lang##*:}
  "$OPCOST" cmd --no-save --name "mandelbrot.$prog" --json "$TMP/lang.json" \
    "$prog $f $MANDEL_N" ::: "$prog $f 1" >/dev/null 2>&1
  jq -r --arg p "$prog" '.results[] | select(.id | test("\\.(user|sys)$") | not) |
    [$p, .median / 1e6, .ci_low / 1e6, .ci_high / 1e6, (.samples | length),
     (.details.baseline_wall_ns / .details.gross_wall_ns * 100)] | @tsv' "$TMP/lang.json" |
    awk -F'\t' '{printf "%-22s %9.2f ms %10.2f … %8.2f ms %6d  %.0f%%%s\n", $1, $2, $3, $4, $5, $6, ($3 <= 0 ? "  (unresolved)" : "")}'
done
