#!/usr/bin/env bash
# Compares opcost's panic-unwind and error-return rows (cpu.panic.unwind/N,
# cpu.error.return/N for N = 1, 10, 100 frames) with a small C++ program
# doing the same, in alternating runs on the same machine (C++, opcost,
# C++, opcost...), so that other load lands on both.
#
# The C++ program (below, compiled with `g++ -O2` at run time) descends
# through N frames of a non-inlined recursion that adds to what the frame
# below returns (no tail calls), and at the bottom either throws an int,
# caught above the top frame (`throw` / `catch (int)`: libgcc's
# _Unwind_RaiseException, the unwinder Rust's panics use too, behind the
# C++ personality routine), or returns an error code checked by every
# frame. It times batches and prints the median time per operation.
#
# usage: scripts/peer-unwind.sh [-r ROUNDS] [-p PROFILE]
#   -r ROUNDS   alternating rounds (default 3)
#   -p PROFILE  opcost profile (default: default)
#
# Prints every round, then per row the median of the rounds and opcost/C++.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
rounds=3 profile=default
usage() { sed -n '2,19p' "$0"; }
parse_options "r:rounds p:profile h" "$@"
need g++
need python3
build_release
temp_dir work
cat >"$work/unwind.cc" <<'CC'
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

static volatile int sink;

__attribute__((noinline)) int down_throw(int n) {
  if (n == 0) throw 0;
  int r = down_throw(n - 1);
  sink = r;
  return r + 1;
}

__attribute__((noinline)) int down_error(int n, int *err) {
  if (n == 0) { *err = 1; return 0; }
  int r = down_error(n - 1, err);
  if (*err) return 0;
  sink = r;
  return r + 1;
}

template <class F> static double median_ns(F f, long ops) {
  std::vector<double> v;
  for (int s = 0; s < 21; s++) {
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < ops; i++) f();
    auto t1 = std::chrono::steady_clock::now();
    v.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / ops);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main() {
  for (int frames : {1, 10, 100}) {
    double t = median_ns([&] {
      try { sink = down_throw(frames - 1); } catch (int) { sink = -1; }
    }, 20000 / frames + 200);
    int err;
    double e = median_ns([&] { err = 0; sink = down_error(frames - 1, &err); }, 2000000 / frames);
    std::printf("throw/%d %.2f\nerror/%d %.2f\n", frames, t, frames, e);
  }
}
CC
g++ -O2 -o "$work/unwind" "$work/unwind.cc"
declare -A cc op
for r in $(seq 1 "$rounds"); do
  while read -r k v; do cc[$k]+="$v "; done < <("$work/unwind")
  "$bin" run cpu.panic.unwind cpu.error.return --profile "$profile" --no-save --no-history --json "$work/o.json" >/dev/null 2>&1
  while read -r k v; do op[$k]+="$v "; done < <(python3 -c '
import json, sys
for m in json.load(open(sys.argv[1]))["results"]:
    kind = "throw" if m["id"].startswith("cpu.panic.unwind/") else "error"
    frames = m["id"].rsplit("/", 1)[1]
    print("%s/%s %.2f" % (kind, frames, m["median"]))
' "$work/o.json")
  echo "round $r done"
done
printf '%-10s %12s %12s %10s\n' row "C++ ns" "opcost ns" opcost/C++
for k in throw/1 throw/10 throw/100 error/1 error/10 error/100; do
  c=$(echo "${cc[$k]}" | tr ' ' '\n' | grep . | median)
  o=$(echo "${op[$k]:-}" | tr ' ' '\n' | grep . | median)
  python3 -c "import sys; c, o = float(sys.argv[2]), float(sys.argv[3]); print(f'{sys.argv[1]:<10} {c:12.2f} {o:12.2f} {o / c:10.2f}')" "$k" "$c" "$o"
done
