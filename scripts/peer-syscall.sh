#!/usr/bin/env bash
# Compares opcost's system-call cost with `perf bench syscall basic`, in
# alternating runs on the same machine (perf, opcost, perf, opcost...), so
# that other load lands on both. perf loops on glibc's getppid(); opcost's
# syscall.getppid.libc is the same call, syscall.getppid.raw the same
# system call without the libc wrapper, syscall.getpid.raw the suite's
# headline figure.
#
# usage: scripts/peer-syscall.sh [-r ROUNDS] [-p PROFILE] [-c CPU] [-l LOOPS]
#   -r ROUNDS   alternating rounds (default 7)
#   -p PROFILE  opcost profile: quick, default, thorough (default: default)
#   -c CPU      pin both tools to this CPU (taskset and --cpu)
#   -l LOOPS    getppid calls of the long perf run (default: perf's own, 10000000)
#   -s SHORT    short perf runs per round (default 21)
#   -n NICE     run both tools at this nice level (e.g. -10; needs root to go below 0)
#
# perf prints the wall time of one long loop divided by its calls, so on a
# busy machine the time spent waiting for a CPU counts as system-call cost;
# opcost takes the median of short batches, which most often run
# undisturbed. So the perf figure is shown twice: as perf prints it (wall),
# and as the CPU time of the perf process (user + sys) per call, which is
# what a call costs when it runs. A third perf figure mirrors opcost's own
# method: the median of many short perf runs (-l 5000, under a millisecond
# each) that the scheduler did not preempt. On a quiet machine the three
# agree.
#
# Prints every round, then the median of each column, the ratios
# opcost/perf, and the run-to-run spread of each median: (max - min) /
# median of the rounds, and their coefficient of variation.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

rounds=7 profile=default cpu="" loops="" short=21 nice=""
usage() { sed -n '2,30p' "$0"; }
parse_options "r:rounds p:profile c:cpu l:loops s:short n:nice h" "$@"
command -v perf >/dev/null || { echo "perf not found: install linux-perf (Debian) or linux-tools (Ubuntu)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 not found: it reads opcost's JSON" >&2; exit 1; }

cargo build --release --quiet
opcost=target/release/opcost
temp_dir tmp

prio=() pin=() pin_opcost=()
if [ -n "$nice" ]; then prio=(nice -n "$nice"); fi
if [ -n "$cpu" ]; then pin=(taskset -c "$cpu"); pin_opcost=(--cpu "$cpu"); fi
loops=${loops:-10000000}
TIMEFORMAT='%3U %3S'

echo "round  perf wall  perf cpu  perf short   opcost getppid.libc  getppid.raw  getpid.raw   (ns/op)"
for i in $(seq 1 "$rounds"); do
  # perf prints "N usecs/op" (wall time); bash's `time` gives its CPU time.
  { time "${prio[@]}" "${pin[@]}" perf bench syscall basic -l "$loops" >"$tmp/perf.out" 2>/dev/null; } 2>"$tmp/perf.time"
  p=$(awk '/usecs\/op/ { printf "%.2f", $1 * 1000 }' "$tmp/perf.out")
  pcpu=$(awk -v n="$loops" '{ printf "%.2f", ($1 + $2) * 1e9 / n }' "$tmp/perf.time")
  pshort=$(python3 - "$short" "${prio[@]}" "${pin[@]}" perf bench syscall basic -l 5000 <<'EOF'
# Short perf runs; like opcost, keep the ones the scheduler did not preempt.
import os, re, statistics, subprocess, sys
n, cmd = int(sys.argv[1]), sys.argv[2:]
clean, every = [], []
for _ in range(n):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = p.stdout.read()
    _, _, usage = os.wait4(p.pid, 0)
    m = re.search(r"([0-9.]+) usecs/op", out)
    if m:
        every.append(float(m.group(1)) * 1000)
        if usage.ru_nivcsw == 0:
            clean.append(every[-1])
pick = clean if len(clean) >= 5 else every
print(f"{statistics.median(pick):.2f}" if pick else "nan")
EOF
)
  "${prio[@]}" "$opcost" run syscall.getppid syscall.getpid.raw --profile "$profile" "${pin_opcost[@]}" \
    --json "$tmp/run$i.json" >/dev/null 2>&1
  read -r libc raw getpid < <(python3 - "$tmp/run$i.json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
m = {r["id"]: r["median"] for r in doc["results"]}
print(" ".join(f'{m.get(k, float("nan")):.2f}' for k in
               ("syscall.getppid.libc", "syscall.getppid.raw", "syscall.getpid.raw")))
EOF
)
  printf "%5d  %9s  %8s  %10s  %20s  %11s  %10s\n" "$i" "$p" "$pcpu" "$pshort" "$libc" "$raw" "$getpid"
  echo "$p $pcpu $pshort $libc $raw $getpid" >>"$tmp/rounds"
done

python3 - "$tmp/rounds" <<'EOF'
import statistics as st, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
cols = list(zip(*rows))
names = ["perf getppid() (wall)", "perf getppid() (cpu)", "perf getppid() (short runs)",
         "opcost syscall.getppid.libc", "opcost syscall.getppid.raw", "opcost syscall.getpid.raw"]
med = [st.median(c) for c in cols]
print()
for n, c, m in zip(names, cols, med):
    spread = (max(c) - min(c)) / m * 100
    cv = (st.stdev(c) / st.mean(c) * 100) if len(c) > 1 else 0.0
    print(f"{n:30s} median {m:8.2f} ns/op   spread {spread:5.1f}%   cv {cv:4.1f}%")
print()
for what, col in (("wall", 0), ("cpu", 1), ("short runs", 2)):
    print(f"ratio opcost getppid.libc / perf {what}: {med[3] / med[col]:.3f}")
EOF
