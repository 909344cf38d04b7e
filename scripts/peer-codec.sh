#!/usr/bin/env bash
# Compares opcost's codec figures with the codecs' own command-line tools on
# the same file, in one sitting: the runs alternate (peers, opcost, peers,
# opcost...) so that load from other work hits both sides alike, and the
# medians are printed side by side.
#
#   zstd --single-thread -b<level> (1, 3, 9, 19) vs codec.file-<name>.zstd-<level>.{compress,decompress}
#   lz4 -b1                       vs codec.file-<name>.lz4-1.{compress,decompress}
#   gzip -k -6, xz -k -6 (timed)  vs codec.file-<name>.gzip-6 / xz-6 .compress
#
# Speeds are uncompressed MB/s (10^6 bytes), ratios input/compressed. The
# -b modes report the best of their one-second runs, each the bytes over
# the time of back-to-back calls (a preemption inside a run counts in it);
# opcost's headline is the median of short samples, which drops preempted
# ones, so opcost's median, its best sample and its bytes over the total
# time of all samples ("total", the -b accounting) are all shown. Target: zstd and
# lz4 speeds within 15% of the -b modes, ratios within 1%. gzip and xz are
# whole command runs (reading and writing a file), shown for orientation.
#
# The same library, not only the same calls: opcost's zstd crate bundles
# its own libzstd release, the zstd tool links the system's, and releases
# differ in speed and ratio (1.5.7's block splitter changes the ratio at
# levels 3 and up). So by default, when pkg-config finds the system libzstd
# and it is the release the zstd tool reports, the script builds opcost
# once more against it (ZSTD_SYS_USE_PKG_CONFIG=1, target/peer-system-zstd)
# and compares that build; LIB=bundled keeps the bundled library. Both
# libraries' versions are printed. lz4-sys has no such switch: its rows
# compare the bundled liblz4 with the lz4 tool's (versions printed).
#
# The zstd tool is a build of its own: Debian's /usr/bin/zstd links the
# library statically, compiled with the distribution's flags (-O2,
# hardening), not the shared libzstd.so. ZSTD_BIN=path compares with
# another zstd tool, e.g. one built from the same release's source with
# upstream's flags (`make -C programs zstd`, -O3).
#
# Usage: scripts/peer-codec.sh [ROUNDS] [FILE]
#   (env: OPCOST=path, LIB=system|bundled, ZSTD_BIN=path, LEVELS="1 3 9 19";
#   default FILE: 4 MB of JSON records made here)
# Needs: zstd, lz4, gzip, xz, jq, python3 (for the default file); pkg-config
# and the libzstd headers (libzstd-dev) for LIB=system.
set -euo pipefail

ROUNDS=${1:-3}
cd "$(dirname "$0")/.."
ZSTD_BIN=${ZSTD_BIN:-zstd}
read -r -a zstd_levels <<<"${LEVELS:-1 3 9 19}"
cli_zstd=$("$ZSTD_BIN" --version | grep -o 'v[0-9.]*' | head -1 | tr -d v)
cli_lz4=$(lz4 --version 2>&1 | grep -o 'v[0-9.]*' | head -1 | tr -d v)
sys_zstd=$(pkg-config --modversion libzstd 2>/dev/null || true)
LIB=${LIB:-$([[ -n "$sys_zstd" && "$sys_zstd" == "$cli_zstd" ]] && echo system || echo bundled)}
if [[ -z "${OPCOST:-}" ]]; then
    cargo build --release --quiet
    OPCOST=target/release/opcost
    if [[ $LIB == system ]]; then
        # Seeded with the release build, so only the zstd crates and opcost
        # are compiled again.
        sysdir=target/peer-system-zstd
        [[ -d $sysdir/release ]] || { mkdir -p "$sysdir" && cp -a target/release "$sysdir/"; }
        ZSTD_SYS_USE_PKG_CONFIG=1 cargo build --release --quiet --target-dir "$sysdir"
        OPCOST=$sysdir/release/opcost
    fi
fi
for t in jq "$ZSTD_BIN" lz4 gzip xz; do
    command -v "$t" >/dev/null || { echo "$t is needed (scripts/install-test-deps.sh installs it)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [[ -n "${2:-}" ]]; then
    file=$2
else
    # A deterministic file of JSON records (the issue's question: compress my JSON?).
    file="$work/records.json"
    python3 - "$file" <<'EOF'
import json, random, sys
r = random.Random(1)
names = ["Ada", "Alan", "Grace", "Edsger", "Barbara", "Ken"]
with open(sys.argv[1], "w") as f:
    i = 0
    while f.tell() < 4_000_000:
        f.write(json.dumps({"id": i, "name": r.choice(names), "age": r.randint(18, 90),
                            "active": r.random() < 0.5, "score": round(r.random() * 1000, 2),
                            "city": r.choice(["Paris", "Oslo", "Rome"]),
                            "tags": r.sample(["a", "b", "c", "d"], 2)}) + "\n")
        i += 1
EOF
fi
[[ -r "$file" ]] || { echo "cannot read $file" >&2; exit 2; }
bytes=$(stat -c %s "$file")
name=$(basename "$file" | tr -c 'A-Za-z0-9_\n-' '_' | cut -c1-40)
prefix="codec.file-$name"
echo "file: $file ($bytes bytes), $ROUNDS alternating rounds; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "opcost: $OPCOST (LIB=$LIB); zstd tool $ZSTD_BIN v$cli_zstd, lz4 tool v$cli_lz4"

key() { echo "$work/m_${1//[^A-Za-z0-9=.-]/_}"; }
record() { echo "$2" >>"$(key "$1")"; }
median() {
    local f
    f=$(key "$1")
    [[ -s "$f" ]] || { echo nan; return; }
    sort -g "$f" | awk '{v[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'
}

# A third view of zstd: a plain C loop of the very calls opcost and zstd -b
# make (ZSTD_compress2 on a kept context, ZSTD_decompressStream), linked to
# the system's libzstd, best of five half-second loops: it tells a
# difference in the library from one in how zstd -b runs its loop.
cloop=""
if [[ -r /usr/include/zstd.h ]] && command -v cc >/dev/null; then
    cat >"$work/zloop.c" <<'EOF'
#include <zstd.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 2;
    fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
    char *in = malloc(n); if (fread(in, 1, n, f) != (size_t)n) return 2; fclose(f);
    size_t cap = ZSTD_compressBound(n), csz = 0;
    char *out = calloc(cap, 1), *back = calloc(n, 1);
    ZSTD_CCtx *c = ZSTD_createCCtx(); ZSTD_DCtx *d = ZSTD_createDCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, atoi(argv[2]));
    double bc = 1e30, bd = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = now(); int k = 0;
        do { csz = ZSTD_compress2(c, out, cap, in, n); k++; } while (now() - t0 < 0.5);
        if ((now() - t0) / k < bc) bc = (now() - t0) / k;
    }
    for (int r = 0; r < 5; r++) {
        double t0 = now(); int k = 0;
        do {
            ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
            ZSTD_inBuffer ib = {out, csz, 0}; ZSTD_outBuffer ob = {back, n, 0}; size_t m;
            do { m = ZSTD_decompressStream(d, &ob, &ib); } while (m != 0 && !ZSTD_isError(m));
            k++;
        } while (now() - t0 < 0.5);
        if ((now() - t0) / k < bd) bd = (now() - t0) / k;
    }
    printf("%.4f %.2f %.2f\n", (double)n / csz, n / bc / 1e6, n / bd / 1e6);
    return 0;
}
EOF
    cc -O2 -o "$work/zloop" "$work/zloop.c" -lzstd 2>/dev/null && cloop="$work/zloop"
fi

peers() {
    # -q prints one line: "-L  compressed (ratio) cMB/s dMB/s name".
    for l in "${zstd_levels[@]}"; do
        "$ZSTD_BIN" -q --single-thread -b"$l" -i2 "$file" 2>&1 | awk -v l="$l" '/MB\/s/ {gsub(/[()]/, "", $3); print "zstd-" l, $3, $4, $6}'
        # Level 19 takes seconds per pass: the C loop skips it.
        if [[ -n "$cloop" && $l != 19 ]]; then
            "$cloop" "$file" "$l" | awk -v l="$l" '{print "cloop-zstd-" l, $1, $2, $3}'
        fi
    done
    lz4 -q -b1 -i2 "$file" 2>&1 | awk '/MB\/s/ {gsub(/[()]/, "", $3); print "lz4-1", $3, $4, $6}'
    for tool in gzip xz; do
        cp "$file" "$work/in"
        local s e
        s=$(date +%s.%N)
        "$tool" -k -6 -f "$work/in"
        e=$(date +%s.%N)
        local packed
        packed=$(stat -c %s "$work/in".$([[ $tool == gzip ]] && echo gz || echo xz))
        rm -f "$work/in" "$work/in".gz "$work/in".xz
        awk -v t="$tool" -v b="$bytes" -v p="$packed" -v s="$s" -v e="$e" \
            'BEGIN {printf "%s-6 %.4f %.2f nan\n", t, b / p, b / (e - s) / 1e6}'
    done
}

patterns=()
for l in "${zstd_levels[@]}"; do patterns+=("$prefix.zstd-$l."); done
patterns+=("$prefix.lz4-1." "$prefix.gzip-6.compress" "$prefix.xz-6.compress")

for ((r = 1; r <= ROUNDS; r++)); do
    echo "round $r/$ROUNDS"
    while read -r what ratio c d; do
        record "peer c $what" "$c"
        record "peer d $what" "$d"
        record "peer r $what" "$ratio"
    done < <(peers)
    "$OPCOST" run "${patterns[@]}" --input "$file" --profile default --no-save \
        --json "$work/o.json" >/dev/null 2>&1
    [[ $r == 1 ]] && jq -r '[.results[] | select(.details.library_version) |
        "\(.id | split(".")[2] | split("-")[0]) library \(.details.library_version)"] | unique | "opcost: " + join(", ")' "$work/o.json"
    # best and total from the samples as measured: a slow round kept in
    # the estimate has its samples corrected for the phase (phase_factor),
    # which a -b run's accounting knows nothing of, so that is undone here.
    python3 - "$work/o.json" <<'PY' |
import json, sys
for m in json.load(open(sys.argv[1]))["results"]:
    raw, i = [], 0
    for r in (x for x in m.get("rounds", []) if x.get("used", True)):
        f = r.get("phase_factor") or 1.0
        raw += [v / f for v in m["samples"][i:i + r["n"]]]  # rates: corrected = measured * f
        i += r["n"]
    raw += m["samples"][i:]
    total = len(raw) / sum(1 / v for v in raw)
    print(m["id"], m["median"], max(raw), total, (m.get("details") or {}).get("ratio"))
PY
        while read -r id med best total ratio; do
            what=${id#"$prefix".}
            op=${what#*.}
            op=${op%%/*}
            what=${what%%.*}
            record "opcost $op $what" "$(awk -v v="$med" 'BEGIN {print v / 1e6}')"
            record "best $op $what" "$(awk -v v="$best" 'BEGIN {print v / 1e6}')"
            record "total $op $what" "$(awk -v v="$total" 'BEGIN {print v / 1e6}')"
            record "opcost r $what" "$ratio"
        done
done

printf '\n%-8s %-10s %10s %10s %10s %10s %8s %8s   %9s %9s %7s\n' codec op "opcost" "best" "total" "peer" "med/peer" "tot/peer" "ratio" "peer" "diff"
for what in zstd-1 zstd-3 zstd-9 zstd-19 lz4-1 gzip-6 xz-6; do
    for op in compress decompress; do
        peer_key="peer c $what"
        [[ $op == decompress ]] && peer_key="peer d $what"
        loop=$(median "${peer_key% *} cloop-$what")
        o=$(median "opcost $op $what")
        [[ $o == nan ]] && continue
        p=$(median "$peer_key")
        b=$(median "best $op $what")
        t=$(median "total $op $what")
        ro=$(median "opcost r $what")
        rp=$(median "peer r $what")
        awk -v w="$what" -v op="$op" -v o="$o" -v b="$b" -v t="$t" -v p="$p" -v ro="$ro" -v rp="$rp" 'BEGIN {
            rel = (p == "nan" || p == 0) ? "-" : sprintf("%.2f", o / p);
            trel = (p == "nan" || p == 0) ? "-" : sprintf("%.2f", t / p);
            diff = (rp == "nan" || rp == 0) ? "-" : sprintf("%+.2f%%", (ro / rp - 1) * 100);
            printf "%-8s %-10s %10.1f %10.1f %10.1f %10s %8s %8s   %9.3f %9s %7s\n", w, op, o, b, t, p, rel, trel, ro, rp, diff
        }'
        if [[ $loop != nan ]]; then
            awk -v o="$o" -v p="$loop" 'BEGIN {
                printf "%-8s %-10s %10s %10s %10s %10.1f %8.2f   (C loop of the same calls, same library)\n", "", "", "", "", "", p, o / p }'
        fi
    done
done
echo
echo "MB/s of uncompressed bytes; opcost = median sample, best = its fastest sample,"
echo "total = bytes over the total time of all its samples (a -b run's accounting);"
echo "peer = the tool's -b figure or, for gzip and xz, one whole -k run. A -b figure is"
echo "the best of one-second runs, each the bytes over the time of back-to-back calls,"
echo "so a preemption by other load inside a run counts in it; opcost's median drops"
echo "such samples, so under load compare tot/peer, on a quiet machine both agree."
echo "The C-loop rows time the same zstd calls in a plain loop on the system's libzstd."
