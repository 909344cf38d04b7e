#!/usr/bin/env bash
# Compares `opcost env --json` with what lscpu, uname and sysfs say on this
# machine: one line per fact, opcost's value beside the system's, and a
# mark where they differ. Exit status 1 when any fact differs.
# Needs: jq, lscpu (util-linux). Usage: scripts/env-vs-system.sh [OPCOST]
set -euo pipefail
cd "$(dirname "$0")/.."
OPCOST=${1:-}
if [ -z "$OPCOST" ]; then
  cargo build --release --quiet
  OPCOST=target/release/opcost
fi
for tool in jq lscpu; do
  command -v "$tool" >/dev/null || { echo "$tool is needed (apt-get install $tool)" >&2; exit 2; }
done

env_json=$("$OPCOST" env --json)
lscpu_json=$(LC_ALL=C lscpu -J)
o() { jq -r "$1 // \"-\"" <<<"$env_json"; }
l() { jq -r --arg f "$1" '[.lscpu[] | select(.field == $f) | .data][0] // "-"' <<<"$lscpu_json"; }

differ=0
row() { # fact, opcost, system
  local mark=" "
  if [ "$2" != "$3" ]; then mark="≠"; differ=1; fi
  printf '%s %-28s %-36s %s\n' "$mark" "$1" "$2" "$3"
}
# lscpu prints cache totals ("96 KiB (2 instances)"); opcost one instance and a count.
cache() { # level kind lscpu-name
  local per n
  per=$(jq -r --argjson lv "$1" --arg k "$2" \
    '[.caches[] | select(.level == $lv and .kind == $k)][0] | if . == null then "-" else "\(.size_bytes / 1024) \(.instances)" end' <<<"$env_json")
  if [ "$per" = "-" ]; then row "$3" "-" "$(l "$3 cache:")"; return; fi
  read -r kib n <<<"$per"
  local total=$((kib * n)) unit=KiB
  if [ $((total % 1024)) -eq 0 ]; then total=$((total / 1024)); unit=MiB; fi
  local inst="instances"; [ "$n" = 1 ] && inst="instance"
  row "$3" "$total $unit ($n $inst)" "$(l "$3 cache:")"
}

printf '  %-28s %-36s %s\n' fact opcost system
row architecture "$(o .cpu.arch)" "$(uname -m)"
row "model name" "$(o .cpu.model)" "$(l 'Model name:')"
row vendor "$(o .cpu.vendor)" "$(l 'Vendor ID:')"
row family "$(o .cpu.family)" "$(l 'CPU family:')"
row model "$(o .cpu.model_number)" "$(l 'Model:')"
row stepping "$(o .cpu.stepping)" "$(l 'Stepping:')"
row "logical CPUs" "$(o .logical_cpus)" "$(l 'CPU(s):')"
row "threads per core" "$(o .cpu.threads_per_core)" "$(l 'Thread(s) per core:')"
row sockets "$(o .cpu.sockets)" "$(l 'Socket(s):')"
cps=$(l 'Core(s) per socket:'); sk=$(l 'Socket(s):')
[[ "$cps$sk" =~ ^[0-9]+$ ]] && lcores=$((cps * sk)) || lcores="-"
row "physical cores" "$(o .cpu.physical_cores)" "$lcores"
row "NUMA nodes" "$(o .cpu.numa_nodes)" "$(l 'NUMA node(s):')"
row hypervisor "$(o .virt.hypervisor)" "$(l 'Hypervisor vendor:')"
cache 1 Data L1d
cache 1 Instruction L1i
cache 2 Unified L2
cache 3 Unified L3
row hostname "$(o .hostname)" "$(uname -n)"
row "kernel name" "$(o .kernel.name)" "$(uname -s)"
row "kernel release" "$(o .kernel.release)" "$(uname -r)"
row "kernel version" "$(o .kernel.version)" "$(uname -v)"
for f in /sys/devices/system/cpu/vulnerabilities/*; do
  [ -e "$f" ] || continue
  name=$(basename "$f")
  row "$name" "$(o ".vulnerabilities.\"$name\"")" "$(cat "$f")"
done
exit "$differ"
