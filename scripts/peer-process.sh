#!/usr/bin/env bash
# Compares the process suite with its peers on this machine. Runs alternate
# (peer, opcost, peer, opcost...) so that load from other work hits both
# alike; then the medians are printed side by side with their ratio.
#
#  - `perf bench sched pipe`, pinned to one CPU with taskset, processes and
#    threads (-T), vs process.switch.pingpong_process / _thread run with
#    --cpu on the same CPU: both are the round trip of one byte over two
#    pipes (two context switches), per operation. perf prints total time /
#    loops, a mean, so opcost's mean is set beside it (its median too).
#  - a tiny C program, compiled here with `cc`, that forks N children which
#    _exit(0) at once and reaps each (a small parent: its RSS is about 1 MiB),
#    median of its per-fork time, vs process.fork_exit (fork from opcost's
#    small helper) and process.fork_exit.from_opcost (fork from opcost).
#  - `hyperfine -N /bin/true` (spawn, wait; median) vs
#    process.posix_spawn_dynamic (posix_spawn of /bin/true, waitpid).
#
# Needs: perf (linux-perf), hyperfine, jq, taskset, cc.
# Usage: scripts/peer-process.sh [ROUNDS [CPU]]   (default 5 rounds, last CPU)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ROUNDS=${1:-5}
CPU=${2:-$(( $(nproc) - 1 ))}
need perf hyperfine jq taskset cc
cargo build --release --quiet
OPCOST=target/release/opcost
TRUE=$(command -v true | grep / || echo /bin/true)
temp_dir

cat >"$TMP/forkexit.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
/* fork + _exit(0) + waitpid, N times; prints ns per fork. */
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 2000;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) {
        pid_t p = fork();
        if (p < 0) { perror("fork"); return 1; }
        if (p == 0) _exit(0);
        int st;
        if (waitpid(p, &st, 0) != p || !WIFEXITED(st)) { perror("waitpid"); return 1; }
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
    return 0;
}
EOF
cc -O2 -o "$TMP/forkexit" "$TMP/forkexit.c"

# perf bench sched pipe prints "   9.029850 usecs/op"; in ns.
perf_pipe() { taskset -c "$CPU" perf bench sched pipe -l 50000 "$@" 2>/dev/null | awk '/usecs\/op/ {printf "%.1f\n", $1*1000}'; }

: >"$TMP/perf_proc"; : >"$TMP/perf_thread"; : >"$TMP/hf"; : >"$TMP/c_fork"; : >"$TMP/op_fork"; : >"$TMP/op_fork_big"
: >"$TMP/op_proc"; : >"$TMP/op_thread"; : >"$TMP/op_dyn"
: >"$TMP/op_proc_med"; : >"$TMP/op_thread_med"
for i in $(seq 1 "$ROUNDS"); do
  perf_pipe >>"$TMP/perf_proc"
  "$OPCOST" run process.switch --profile default --cpu "$CPU" --no-save --json "$TMP/sw.json" >/dev/null 2>&1
  opcost_stat "$TMP/sw.json" process.switch.pingpong_process mean >>"$TMP/op_proc"
  opcost_stat "$TMP/sw.json" process.switch.pingpong_process median >>"$TMP/op_proc_med"
  opcost_stat "$TMP/sw.json" process.switch.pingpong_thread mean >>"$TMP/op_thread"
  opcost_stat "$TMP/sw.json" process.switch.pingpong_thread median >>"$TMP/op_thread_med"
  perf_pipe -T >>"$TMP/perf_thread"
  hyperfine -N --style none --warmup 20 --runs 200 --export-json "$TMP/hf.json" "$TRUE" >/dev/null 2>&1
  jq -r '.results[0].median * 1e9' "$TMP/hf.json" >>"$TMP/hf"
  "$OPCOST" run process.posix_spawn_dynamic --profile default --no-save --json "$TMP/dyn.json" >/dev/null 2>&1
  opcost_stat "$TMP/dyn.json" process.posix_spawn_dynamic median >>"$TMP/op_dyn"
  "$TMP/forkexit" 2000 >>"$TMP/c_fork"
  "$OPCOST" run process.fork_exit --profile default --no-save --json "$TMP/fork.json" >/dev/null 2>&1
  opcost_stat "$TMP/fork.json" process.fork_exit median >>"$TMP/op_fork"
  opcost_stat "$TMP/fork.json" process.fork_exit.from_opcost median >>"$TMP/op_fork_big"
  echo "round $i/$ROUNDS done" >&2
done

row() { # label peer-file opcost-file peer-name
  medians_row '%-34s %12.0f ns %12.0f ns %8.2f   %s\n' 34 "$1" "$2" "$3" "  peer runs (ns)" "  opcost runs (ns)" "$4"
}
echo
echo "medians over $ROUNDS alternating runs; CPU $CPU for the pinned pairs"
printf '%-34s %15s %15s %8s   %s\n' "" "peer" "opcost" "ratio" "peer command"
row "pipe round trip, 2 processes" "$TMP/perf_proc" "$TMP/op_proc" "taskset -c $CPU perf bench sched pipe -l 50000 (vs opcost mean)"
printf '%-34s %15s %12.0f ns\n' "  opcost median instead" "" "$(median <"$TMP/op_proc_med")"
row "pipe round trip, 2 threads" "$TMP/perf_thread" "$TMP/op_thread" "taskset -c $CPU perf bench sched pipe -T -l 50000 (vs opcost mean)"
printf '%-34s %15s %12.0f ns\n' "  opcost median instead" "" "$(median <"$TMP/op_thread_med")"
row "spawn $TRUE + wait" "$TMP/hf" "$TMP/op_dyn" "hyperfine -N --runs 200 $TRUE (median vs opcost median)"
row "fork+exit from a small parent" "$TMP/c_fork" "$TMP/op_fork" "cc-built fork+_exit+waitpid loop, 2000 forks (median of runs vs opcost median)"
row "fork+exit, opcost as the parent" "$TMP/c_fork" "$TMP/op_fork_big" "the same C loop vs process.fork_exit.from_opcost"
