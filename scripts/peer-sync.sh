#!/usr/bin/env bash
# Compares opcost's lock and atomic rows (cpu.mutex.*, cpu.atomic.*) with a
# small C program doing the same, in alternating runs on the same machine
# (C, opcost, C, opcost...), so that other load lands on both.
#
# The C program (below, compiled with `cc -O2 -pthread` at run time) times
# batches of the same loops and prints the median time per operation:
#   pthread      pthread_mutex_lock + unlock, one thread (beside std's Mutex)
#   futex        the three-state futex mutex opcost's cpu.mutex.futex.* use
#   atomic       __atomic_fetch_add on a counter only this thread touches
#   contended    two threads adding to one counter until it reaches the end
#                (CPU A = CPU B: one CPU; else two): time per increment
#   handoff-pthread / handoff-futex
#                two threads on two CPUs, each taking the lock and counting
#                one hand-over on its turn: time per hand-over
#
# usage: scripts/peer-sync.sh [-r ROUNDS] [-p PROFILE] [-a CPU] [-b CPU]
#   -r ROUNDS   alternating rounds (default 5)
#   -p PROFILE  opcost profile: quick, default, thorough (default: default)
#   -a CPU, -b CPU  the two CPUs (default: the first two this process may
#               use; opcost picks the same ones)
#
# Prints every round, then per row the median of the rounds, opcost/C, and
# the spread of each column ((max - min) / median).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

rounds=5 profile=default a="" b=""
usage() { sed -n '2,25p' "$0"; }
parse_options "r:rounds p:profile a:a b:b h" "$@"
command -v cc >/dev/null || { echo "cc not found: install gcc" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 not found: it reads opcost's JSON" >&2; exit 1; }
if [ -z "$a" ] || [ -z "$b" ]; then
  read -r a0 b0 < <(python3 -c 'import os; c = sorted(os.sched_getaffinity(0)); print(c[0], c[1] if len(c) > 1 else c[0])')
  a=${a:-$a0} b=${b:-$b0}
fi
cross=1
if [ "$a" = "$b" ]; then
  echo "one CPU only: the two-CPU rows are left out" >&2
  cross=0
fi

cargo build --release --quiet
opcost=target/release/opcost
temp_dir tmp

cat >"$tmp/peer.c" <<'EOF'
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { PTHREAD, FUTEX, ATOMIC, CONTENDED, HANDOFF_PTHREAD, HANDOFF_FUTEX };
static const char *names[] = {"pthread", "futex", "atomic", "contended", "handoff-pthread", "handoff-futex"};
static _Alignas(128) unsigned fx;
static _Alignas(128) pthread_mutex_t pm = PTHREAD_MUTEX_INITIALIZER;
static _Alignas(128) volatile uint64_t count;
static _Alignas(128) volatile int ready;
static _Alignas(128) volatile int go;
static uint64_t end_;
static int mode, peer_cpu, same_cpu;

static void flk(void) {
  unsigned c = 0;
  if (!__atomic_compare_exchange_n(&fx, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
    if (c != 2) c = __atomic_exchange_n(&fx, 2, __ATOMIC_ACQUIRE);
    while (c) {
      syscall(SYS_futex, &fx, FUTEX_WAIT_PRIVATE, 2, NULL);
      c = __atomic_exchange_n(&fx, 2, __ATOMIC_ACQUIRE);
    }
  }
}
static void ful(void) {
  if (__atomic_exchange_n(&fx, 0, __ATOMIC_RELEASE) == 2) syscall(SYS_futex, &fx, FUTEX_WAKE_PRIVATE, 1);
}
static void lk(void) { if (mode == FUTEX || mode == HANDOFF_FUTEX) flk(); else pthread_mutex_lock(&pm); }
static void ul(void) { if (mode == FUTEX || mode == HANDOFF_FUTEX) ful(); else pthread_mutex_unlock(&pm); }
static void pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}
/* One thread's share of a two-thread batch (me: the parity of its turns). */
static void share(uint64_t me) {
  if (mode == CONTENDED) {
    while (__atomic_fetch_add(&count, 1, __ATOMIC_RELAXED) < end_) {}
    return;
  }
  for (;;) {
    lk();
    uint64_t n = count;
    if (n < end_ && n % 2 == me) count = n + 1;
    ul();
    if (n >= end_) return;
  }
}
static void *rival(void *arg) {
  (void)arg;
  pin(peer_cpu);
  __atomic_store_n(&ready, 1, __ATOMIC_SEQ_CST);
  /* Start with the clock, as opcost's rival does: on the measuring
   * thread's CPU give the CPU away while waiting, on another poll. */
  while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
    if (same_cpu) sched_yield();
  share(1);
  return NULL;
}
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}
static int cmp(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}
int main(int argc, char **argv) {
  if (argc < 5) { fprintf(stderr, "usage: peer MODE CPU_A CPU_B OPS\n"); return 2; }
  for (mode = 0; mode < 6 && strcmp(argv[1], names[mode]); mode++) {}
  if (mode == 6) { fprintf(stderr, "unknown mode %s\n", argv[1]); return 2; }
  pin(atoi(argv[2]));
  peer_cpu = atoi(argv[3]);
  same_cpu = peer_cpu == atoi(argv[2]);
  uint64_t ops = strtoull(argv[4], NULL, 10);
  enum { BATCHES = 21 };
  double per_op[BATCHES];
  for (int i = -2; i < BATCHES; i++) { /* two warm-up batches */
    double t0, t1;
    if (mode <= ATOMIC) {
      t0 = now(); /* one loop per mode: no test of `mode` after each fence */
      if (mode == ATOMIC)
        for (uint64_t k = 0; k < ops; k++) __atomic_fetch_add(&count, 1, __ATOMIC_RELAXED);
      else if (mode == FUTEX)
        for (uint64_t k = 0; k < ops; k++) { flk(); count = count + 1; ful(); }
      else
        for (uint64_t k = 0; k < ops; k++) { pthread_mutex_lock(&pm); count = count + 1; pthread_mutex_unlock(&pm); }
      t1 = now();
    } else {
      pthread_t t;
      count = 0;
      end_ = ops;
      ready = 0;
      go = 0;
      pthread_create(&t, NULL, rival, NULL);
      while (!__atomic_load_n(&ready, __ATOMIC_SEQ_CST)) sched_yield();
      t0 = now();
      __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
      share(0);
      pthread_join(t, NULL);
      t1 = now();
    }
    if (i >= 0) per_op[i] = (t1 - t0) / ops;
  }
  qsort(per_op, BATCHES, sizeof per_op[0], cmp);
  printf("%.3f\n", per_op[BATCHES / 2]);
  return 0;
}
EOF
cc -O2 -pthread -o "$tmp/peer" "$tmp/peer.c"

# opcost id, C mode, C's CPU B, operations per C batch (~5 ms)
rows=(
  "cpu.mutex.std.uncontended pthread $a 1000000"
  "cpu.mutex.futex.uncontended futex $a 1000000"
  "cpu.atomic.add.uncontended atomic $a 2000000"
  "cpu.atomic.add.contended/same contended $a 2000000"
)
if [ "$cross" = 1 ]; then
  rows+=(
    "cpu.atomic.add.contended/cross contended $b 500000"
    "cpu.mutex.std.handoff handoff-pthread $b 20000"
    "cpu.mutex.futex.handoff handoff-futex $b 20000"
  )
fi
ids=()
for r in "${rows[@]}"; do read -r id _ <<<"$r"; ids+=("$id"); done

for i in $(seq 1 "$rounds"); do
  for r in "${rows[@]}"; do
    read -r id m cb n <<<"$r"
    echo "$i c $id $("$tmp/peer" "$m" "$a" "$cb" "$n")" >>"$tmp/rounds"
  done
  "$opcost" run "${ids[@]}" --profile "$profile" --no-save --json "$tmp/run$i.json" >/dev/null 2>&1
  python3 - "$tmp/run$i.json" "$i" >>"$tmp/rounds" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for r in doc["results"]:
    print(sys.argv[2], "opcost", r["id"], f'{r["median"]:.3f}')
PY
  echo "round $i done" >&2
done

python3 - "$tmp/rounds" "${ids[@]}" <<'PY'
import statistics as st, sys
by = {}
for line in open(sys.argv[1]):
    _, who, id_, v = line.split()
    by.setdefault((id_, who), []).append(float(v))
print(f"{'opcost row':32s} {'C (ns/op)':>10s} {'opcost':>10s} {'opcost/C':>9s} {'C spread':>9s} {'op spread':>9s}")
for id_ in sys.argv[2:]:
    c, o = by.get((id_, "c"), []), by.get((id_, "opcost"), [])
    if not c or not o:
        print(f"{id_:32s} missing")
        continue
    mc, mo = st.median(c), st.median(o)
    sc, so = (max(c) - min(c)) / mc * 100, (max(o) - min(o)) / mo * 100
    print(f"{id_:32s} {mc:10.2f} {mo:10.2f} {mo / mc:9.2f} {sc:8.0f}% {so:8.0f}%")
PY
