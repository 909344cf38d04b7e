#!/usr/bin/env bash
# Compares opcost's crypto figures and integer score with the usual tools,
# in alternating runs on the same machine (peers, opcost, peers, opcost...),
# so that other load lands on both:
#   crypto.aes256gcm.encrypt/16KiB  vs  openssl speed -evp aes-256-gcm -bytes 16384
#   crypto.sha256/16KiB             vs  openssl speed -evp sha256 -bytes 16384
#   cpu.integer.primes              vs  sysbench cpu --cpu-max-prime=10000 --threads=1
# opcost uses the RustCrypto crates (aes-gcm, sha2), OpenSSL its own
# assembly: both take the CPU's AES/SHA instructions when present, so the
# ratio says how close the Rust crates come to OpenSSL. The integer score
# counts primes by trial division exactly as a sysbench cpu event does, so
# events per second should agree.
#
# usage: scripts/peer-crypto.sh [-r ROUNDS] [-p PROFILE] [-s SECONDS]
#   -r ROUNDS   alternating rounds (default 5)
#   -p PROFILE  opcost profile: quick, default, thorough (default: default)
#   -s SECONDS  seconds per openssl and sysbench measurement (default 2)
#
# Prints every round, then the median of each column and the ratios
# opcost / peer.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=5 profile=default secs=2
while getopts "r:p:s:h" opt; do
  case $opt in
    r) rounds=$OPTARG ;;
    p) profile=$OPTARG ;;
    s) secs=$OPTARG ;;
    *) sed -n '2,22p' "$0"; exit 2 ;;
  esac
done
for c in openssl sysbench python3; do
  command -v "$c" >/dev/null || { echo "$c not found: apt-get install -y $c" >&2; exit 1; }
done

cargo build --release --quiet
opcost=target/release/opcost
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# openssl speed's last line: "<name> <16B> <64B> ... <16384B>" in kB/s (1000 B).
ossl() {
  openssl speed -elapsed -seconds "$secs" -bytes 16384 -evp "$1" 2>/dev/null \
    | awk 'END { v = $NF; sub(/k$/, "", v); printf "%.1f", v * 1000 / 1e6 }'
}

echo "round  openssl aes-gcm  opcost aes-gcm  openssl sha256  opcost sha256  (MB/s)   sysbench  opcost integer  (events/s)"
for i in $(seq 1 "$rounds"); do
  oa=$(ossl aes-256-gcm)
  os=$(ossl sha256)
  sb=$(sysbench cpu --cpu-max-prime=10000 --threads=1 --time="$secs" run 2>/dev/null \
    | awk '/events per second/ { print $NF }')
  "$opcost" run crypto cpu.integer.primes --profile "$profile" --no-save \
    --json "$tmp/run$i.json" >/dev/null 2>&1
  read -r ca cs ci < <(python3 - "$tmp/run$i.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
m = {r["id"]: r["median"] for r in doc["results"]}
nan = float("nan")
print(f'{m.get("crypto.aes256gcm.encrypt/16KiB", nan) / 1e6:.1f}',
      f'{m.get("crypto.sha256/16KiB", nan) / 1e6:.1f}',
      f'{m.get("cpu.integer.primes", nan):.1f}')
PY
)
  printf "%5d  %15s  %14s  %14s  %13s  %18s  %14s\n" "$i" "$oa" "$ca" "$os" "$cs" "$sb" "$ci"
  echo "$oa $ca $os $cs $sb $ci" >>"$tmp/rounds"
done

python3 - "$tmp/rounds" <<'PY'
import statistics as st, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
cols = list(zip(*rows))
med = [st.median(c) for c in cols]
names = ["openssl aes-256-gcm (MB/s)", "opcost crypto.aes256gcm (MB/s)",
         "openssl sha256 (MB/s)", "opcost crypto.sha256 (MB/s)",
         "sysbench cpu (events/s)", "opcost cpu.integer.primes (events/s)"]
print()
for n, c, m in zip(names, cols, med):
    spread = (max(c) - min(c)) / m * 100 if m else float("nan")
    print(f"{n:38s} median {m:10.1f}   spread {spread:5.1f}%")
print()
print(f"ratio opcost / openssl, AES-256-GCM: {med[1] / med[0]:.3f}")
print(f"ratio opcost / openssl, SHA-256:     {med[3] / med[2]:.3f}")
print(f"ratio opcost / sysbench, integer:    {med[5] / med[4]:.3f}")
PY
