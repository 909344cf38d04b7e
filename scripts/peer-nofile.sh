#!/usr/bin/env bash
# Compares the descriptor-limit sweep of the process suite with a small C
# program doing the same on this machine. Runs alternate (C, opcost, C,
# opcost...) so that load from other work hits both alike; the medians are
# printed side by side with their ratio.
#
# The C program is the small parent: it sets its own soft RLIMIT_NOFILE
# (raising the hard limit when it may), then N times forks a child that
# closes every descriptor from 3 up to the limit (or calls close_range)
# and execs a static program that only exits, and waits for it; it prints
# the median ns per spawn. opcost's rows: process.nofile.close_loop and
# process.nofile.close_range at the same limits. A limit this machine
# refuses (hard limit, CAP_SYS_RESOURCE) is reported as skipped by both.
#
# Needs: cc, jq; x86_64 (the exit program is a few instructions of it).
# Usage: scripts/peer-nofile.sh [ROUNDS]   (default 5 rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ROUNDS=${1:-5}
need cc jq
cargo build --release --quiet
OPCOST=target/release/opcost
temp_dir

cat >"$TMP/exit.c" <<'C'
void _start(void) { __asm__ volatile("mov $231, %eax\n xor %edi, %edi\n syscall"); }
C
cc -O2 -static -nostdlib -o "$TMP/exit" "$TMP/exit.c"

cat >"$TMP/closeloop.c" <<'C'
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
/* closeloop LIMIT loop|range SPAWNS PROGRAM: median ns per fork + close + exec + wait. */
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    rlim_t lim = strtoul(argv[1], 0, 10); int loop = !strcmp(argv[2], "loop"); long n = atol(argv[3]);
    struct rlimit r; getrlimit(RLIMIT_NOFILE, &r); r.rlim_cur = lim; if (r.rlim_max < lim) r.rlim_max = lim;
    if (setrlimit(RLIMIT_NOFILE, &r)) { perror("setrlimit"); return 3; }
    char *av[] = {argv[4], 0}, *ev[] = {0}; double *t = malloc(n * sizeof *t); struct timespec a, b;
    for (long i = 0; i < n; i++) {
        clock_gettime(CLOCK_MONOTONIC, &a);
        pid_t p = fork();
        if (p == 0) {
            if (loop) { struct rlimit c; getrlimit(RLIMIT_NOFILE, &c); for (int fd = 3; fd < (int)c.rlim_cur; fd++) close(fd); }
            else syscall(SYS_close_range, 3, ~0U, 0);
            execve(av[0], av, ev); _exit(127);
        }
        int st; if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st)) { fprintf(stderr, "spawn failed\n"); return 1; }
        clock_gettime(CLOCK_MONOTONIC, &b);
        t[i] = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
    }
    qsort(t, n, sizeof *t, cmp);
    printf("%.0f\n", n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2);
    return 0;
}
C
cc -O2 -o "$TMP/closeloop" "$TMP/closeloop.c"

LIMITS="1024 65536 1048576"
spawns() { case $1 in 1048576) echo 21 ;; 65536) echo 101 ;; *) echo 401 ;; esac; }
for i in $(seq 1 "$ROUNDS"); do
  for lim in $LIMITS; do
    for how in loop range; do
      "$TMP/closeloop" "$lim" "$how" "$(spawns "$lim")" "$TMP/exit" >>"$TMP/c_${how}_$lim" 2>/dev/null || true
    done
  done
  "$OPCOST" run process.nofile --profile default --no-save --json "$TMP/o.json" >/dev/null 2>&1
  for lim in $LIMITS; do
    for how in loop range; do
      row=close_$how; [ "$how" = loop ] || row=close_range
      opcost_stat "$TMP/o.json" "process.nofile.$row/nofile=$lim" median >>"$TMP/o_${how}_$lim"
    done
  done
  echo "round $i/$ROUNDS done" >&2
done

echo
echo "medians over $ROUNDS alternating runs (ns per spawn: fork, close, exec of a static exit program, wait)"
printf '%-28s %14s %14s %8s\n' "" "C program" "opcost" "ratio"
for lim in $LIMITS; do
  for how in loop range; do
    label="close_$how, limit $lim"; [ "$how" = loop ] || label="close_range, limit $lim"
    c=$(median <"$TMP/c_${how}_$lim"); o=$(median <"$TMP/o_${how}_$lim")
    if [ "$c" = nan ] || [ "$o" = nan ]; then
      printf '%-28s %s\n' "$label" "skipped (the limit is above what this machine allows)"
      continue
    fi
    printf '%-28s %11.0f ns %11.0f ns %8.2f\n' "$label" "$c" "$o" "$(ratio "$o" "$c")"
    runs_line 28 "  C runs (ns)" "$TMP/c_${how}_$lim"
    runs_line 28 "  opcost runs (ns)" "$TMP/o_${how}_$lim"
  done
done
