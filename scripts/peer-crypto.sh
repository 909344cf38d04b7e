#!/usr/bin/env bash
# Compares every crypto row that `openssl speed` also measures, and the
# integer score with sysbench, in alternating runs on the same machine
# (peers, opcost, peers, opcost...), so that other load lands on both:
#   crypto.<cipher>.encrypt/<size>  vs  openssl speed -evp <cipher> -bytes <size>
#       aes128gcm aes256gcm chacha20poly1305 aes128ctr aes256ctr at 64, 1024, 16384 B
#   crypto.<hash>/<size>            vs  openssl speed -evp <hash> -bytes <size>
#       sha256 sha512 sha1 md5 (BLAKE3 has no openssl row)
#   crypto.ed25519.*, ecdsap256.*, rsa2048.*  vs  openssl speed ed25519 ecdsap256 rsa2048
#   crypto.x25519.keygen+derive     vs  openssl speed ecdhx25519 (derive only: shown, not
#                                       the same operation, so not in the ratio target)
#   cpu.integer.primes              vs  sysbench cpu --cpu-max-prime=10000 --threads=1
# Both sides pick the CPU's AES/SHA instructions at run time. openssl
# speed -evp pays its EVP call per message, which shows at 64 B.
#
# usage: scripts/peer-crypto.sh [-r ROUNDS] [-p PROFILE] [-s SECONDS]
#   -r ROUNDS   alternating rounds (default 3)
#   -p PROFILE  opcost profile: quick, default, thorough (default: default)
#   -s SECONDS  seconds per openssl and sysbench measurement (default 1)
#
# Prints each row's median over the rounds for both, the spread of the
# rounds, and the ratio opcost / peer.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

rounds=3 profile=default secs=1
usage() { sed -n '2,24p' "$0"; }
parse_options "r:rounds p:profile s:secs h" "$@"
for c in openssl sysbench python3; do
  command -v "$c" >/dev/null || { echo "$c not found: apt-get install -y $c" >&2; exit 1; }
done

cargo build --release --quiet
exec python3 - "$rounds" "$profile" "$secs" <<'PY'
import json, os, statistics as st, subprocess, sys, tempfile

rounds, profile, secs = int(sys.argv[1]), sys.argv[2], sys.argv[3]
opcost = "target/release/opcost"
ciphers = {"aes128gcm": "aes-128-gcm", "aes256gcm": "aes-256-gcm",
           "chacha20poly1305": "chacha20-poly1305", "aes128ctr": "aes-128-ctr",
           "aes256ctr": "aes-256-ctr"}
hashes = {"sha256": "sha256", "sha512": "sha512", "sha1": "sha1", "md5": "md5"}
sizes = {64: "64B", 1024: "1KiB", 16384: "16KiB"}

def run(args):
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout

def evp(alg, n):
    # Last line: "<name> <rate>k", the rate in kB/s (1000 B).
    out = run(["openssl", "speed", "-elapsed", "-seconds", secs, "-bytes", str(n), "-evp", alg])
    return float(out.strip().splitlines()[-1].split()[-1].rstrip("k")) * 1000

def public_key():
    out = run(["openssl", "speed", "-elapsed", "-seconds", secs,
               "rsa2048", "ecdsap256", "ed25519", "ecdhx25519"])
    r = {}
    for line in out.splitlines():
        f = line.split()
        if line.startswith("rsa 2048 bits"):
            r["crypto.rsa2048.sign"], r["crypto.rsa2048.verify"] = float(f[-2]), float(f[-1])
        elif "ecdsa (nistp256)" in line:
            r["crypto.ecdsap256.sign"], r["crypto.ecdsap256.verify"] = float(f[-2]), float(f[-1])
        elif "EdDSA (Ed25519)" in line:
            r["crypto.ed25519.sign"], r["crypto.ed25519.verify"] = float(f[-2]), float(f[-1])
        elif "ecdh (X25519)" in line:
            r["crypto.x25519.keygen+derive"] = float(f[-1])
    return r

def peers():
    r = {}
    for name, alg in list(ciphers.items()) + list(hashes.items()):
        for n, label in sizes.items():
            rid = f"crypto.{name}.encrypt/{label}" if name in ciphers else f"crypto.{name}/{label}"
            r[rid] = evp(alg, n)
    r.update(public_key())
    out = run(["sysbench", "cpu", "--cpu-max-prime=10000", "--threads=1", f"--time={secs}", "run"])
    r["cpu.integer.primes"] = next(float(l.split()[-1]) for l in out.splitlines()
                                   if "events per second" in l)
    return r

def ours(tmp):
    path = os.path.join(tmp, "run.json")
    subprocess.run([opcost, "run", "crypto", "cpu.integer.primes", "--profile", profile,
                    "--no-save", "--json", path], capture_output=True, check=True)
    return {r["id"]: r["median"] for r in json.load(open(path))["results"]}

peer_runs, our_runs = [], []
with tempfile.TemporaryDirectory() as tmp:
    for i in range(1, rounds + 1):
        peer_runs.append(peers())
        our_runs.append(ours(tmp))
        print(f"round {i} of {rounds} done", file=sys.stderr)

def med(runs, rid):
    v = [r[rid] for r in runs if rid in r]
    return (st.median(v), (max(v) - min(v)) / st.median(v) * 100) if v else (float("nan"), 0)

print(f"{'row':36s} {'unit':5s} {'peer':>12s} {'spread':>7s} {'opcost':>12s} {'spread':>7s} {'opcost/peer':>11s}")
misses = []
for rid in peer_runs[0]:
    p, ps = med(peer_runs, rid)
    o, os_ = med(our_runs, rid)
    ratio = o / p
    unit = "MB/s" if "/" in rid and rid.startswith("crypto.") else "ops/s"
    scale = 1e6 if unit == "MB/s" else 1
    note = ""
    if rid == "crypto.x25519.keygen+derive":
        note = "  (openssl: derive only)"
    elif abs(ratio - 1) > 0.15:
        note = "  beyond 15%"
        misses.append(rid)
    print(f"{rid:36s} {unit:5s} {p / scale:12.1f} {ps:6.1f}% {o / scale:12.1f} {os_:6.1f}% {ratio:11.3f}{note}")
print(f"\n{len(misses)} shared rows beyond ±15% of the peer: {', '.join(misses) or 'none'}")
PY
