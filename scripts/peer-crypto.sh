#!/usr/bin/env bash
# Compares every crypto row that `openssl speed` also measures, and the
# integer score with sysbench, in alternating runs on the same machine
# (peers, opcost, peers, opcost...), so that other load lands on both:
#   crypto.<cipher>.encrypt/<size>  vs  openssl speed -evp <cipher> -bytes <size>
#       aes128gcm aes256gcm chacha20poly1305 aes128ctr aes256ctr at 64, 1024, 16384 B
#       The AEADs (GCM, ChaCha20-Poly1305) against scripts/peer/evp_seal.c where
#       it compiles (cc, OpenSSL headers: apt-get install libssl-dev): OpenSSL's
#       EVP sealing record after record, a fresh nonce and a tag each, as
#       opcost's rows do; `openssl speed -evp` streams one context without a
#       nonce or a tag per record, a different operation for small records.
#       Without the headers: openssl speed -aead (said in the table).
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
need openssl sysbench python3
build_release
temp_dir seal_dir
seal=""
if cc -O2 -o "$seal_dir/evp_seal" scripts/peer/evp_seal.c -lcrypto 2>/dev/null; then
  seal="$seal_dir/evp_seal"
else
  echo "scripts/peer/evp_seal.c did not compile (libssl-dev?): AEAD rows against openssl speed -aead" >&2
fi
python3 - "$rounds" "$profile" "$secs" "$seal" "$bin" <<'PY'
import json, os, statistics as st, subprocess, sys, tempfile

rounds, profile, secs, seal, opcost = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
seal_names = {"aes-128-gcm": "AES-128-GCM", "aes-256-gcm": "AES-256-GCM",
              "chacha20-poly1305": "ChaCha20-Poly1305"}
ciphers = {"aes128gcm": "aes-128-gcm", "aes256gcm": "aes-256-gcm",
           "chacha20poly1305": "chacha20-poly1305", "aes128ctr": "aes-128-ctr",
           "aes256ctr": "aes-256-ctr"}
hashes = {"sha256": "sha256", "sha512": "sha512", "sha1": "sha1", "md5": "md5"}
sizes = {64: "64B", 1024: "1KiB", 16384: "16KiB"}

def run(args):
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout

def evp(alg, n):
    # Last line: "<name> <rate>k", the rate in kB/s (1000 B). An AEAD is
    # timed with -aead: a fresh nonce, the data and a tag per message, as
    # opcost's rows seal (without it openssl streams the data, no tag).
    if alg in seal_names and seal:
        return float(run([seal, seal_names[alg], str(n), secs]))
    aead = ["-aead"] if alg in seal_names else []
    out = run(["openssl", "speed", "-elapsed", "-seconds", secs, "-bytes", str(n)] + aead + ["-evp", alg])
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
    elif abs(ratio - 1) > 0.15 and ratio > 1:
        note = "  faster than the peer"
    elif abs(ratio - 1) > 0.15:
        note = "  beyond 15%"
        misses.append(rid)
    print(f"{rid:36s} {unit:5s} {p / scale:12.1f} {ps:6.1f}% {o / scale:12.1f} {os_:6.1f}% {ratio:11.3f}{note}")
print(f"\n{len(misses)} shared rows slower than the peer by more than 15%: {', '.join(misses) or 'none'}")
print("peer of the AEAD rows: " + ("scripts/peer/evp_seal.c (EVP, nonce and tag per record)" if seal
      else "openssl speed -aead"))
PY
